// Validates the custom resources the chart renders, which kubernetes-validate has no schema
// for, against the schemas of their CRDs as packaged by @kubernetes-models (generated from the
// upstream CRDs: types, required fields, enums, patterns such as Prometheus durations). Those
// schemas do NOT reject unknown fields (the CRDs themselves allow the API server to prune
// them), so a misspelt optional field passes here; the chart's values.schema.json is what
// catches typos in values. PrometheusRule expressions are additionally parsed with the
// Prometheus UI's PromQL grammar (@prometheus-io/lezer-promql): a syntax error fails.
//
// Used by scripts/check-deploy.sh:  node validate-crds.mjs RESOURCES.json
// where RESOURCES.json is the list validate_k8s.py wrote ({file, resource} objects).
// Prints one line per resource and `RESULT passed=N failed=M`; exit status 1 on a failure.

import { readFileSync } from "node:fs";
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { parser as promql } from "@prometheus-io/lezer-promql";

const models = {
  "gateway.networking.k8s.io/v1/HTTPRoute": HTTPRoute,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

// Byte offsets of PromQL syntax errors in expr (empty when it parses).
function promqlErrors(expr) {
  const errors = [];
  promql.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
    },
  });
  return errors;
}

function check(resource) {
  const key = `${resource.apiVersion}/${resource.kind}`;
  const Model = models[key];
  if (!Model) return [`no CRD schema known for ${key}`];
  const problems = [];
  try {
    new Model(resource).validate();
  } catch (e) {
    problems.push(e.message);
  }
  if (resource.kind === "PrometheusRule") {
    for (const group of resource.spec?.groups ?? []) {
      for (const rule of group.rules ?? []) {
        const expr = String(rule.expr);
        const at = promqlErrors(expr);
        if (at.length) problems.push(`${rule.alert ?? rule.record}: PromQL syntax error at offset ${at[0]}: ${expr}`);
      }
    }
  }
  return problems;
}

const items = JSON.parse(readFileSync(process.argv[2], "utf8"));
let passed = 0;
let failed = 0;
for (const { file, resource } of items) {
  const name = `${resource.kind.toLowerCase()}/${resource.metadata?.name}`;
  const problems = check(resource);
  if (problems.length) {
    failed += 1;
    console.log(`FAIL ${file}: ${name}`);
    for (const p of problems) console.log(`     ${p}`);
  } else {
    passed += 1;
    console.log(`ok   ${file}: ${name} (CRD schema${resource.kind === "PrometheusRule" ? ", PromQL parsed" : ""})`);
  }
}
console.log(`RESULT passed=${passed} failed=${failed}`);
process.exit(failed ? 1 : 0);
