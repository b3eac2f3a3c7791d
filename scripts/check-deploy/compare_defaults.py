"""Checks that the Helm chart's defaults and the plain manifests describe the same fleet.

Used by scripts/check-deploy.sh, run with the venv's Python (PyYAML):

    compare_defaults.py CHART_RENDER_DIR deploy/kubernetes

CHART_RENDER_DIR holds `helm template --output-dir` of the chart with its default values
plus autoscaling.enabled (so the HPA renders; the NetworkPolicy is on by default).
The two are written by hand and drift easily (the stream lifetime once differed: 3600 s in
the manifests, off in the chart); this compares what both are meant to share: the node's
environment, probes, lifecycle, security settings, resources, the PDB, the HPA and the
NetworkPolicy rules. Names and labels are allowed to differ (the chart's carry the release).

Prints one line per comparison and `RESULT passed=N failed=M`; exit status 1 on a mismatch.
"""

import base64
import glob
import os
import sys

import yaml


def load_all(paths):
    """Every document in paths, by kind (the first of each kind wins), and the Secrets by name."""
    by_kind, secrets = {}, {}
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    by_kind.setdefault(doc["kind"], doc)
                    if doc["kind"] == "Secret":
                        secrets[doc["metadata"]["name"]] = doc
    return by_kind, secrets


def resolve_secret_refs(env, secrets):
    """env with each secretKeyRef to a Secret in `secrets` replaced by its decoded value: the
    chart passes the bus URL through its own Secret, the manifests inline the password-less
    try-it-out URL; what the node receives must be the same."""
    out = {}
    for name, value in env.items():
        ref = value.get("secretKeyRef") if isinstance(value, dict) else None
        if ref and ref["name"] in secrets:
            data = secrets[ref["name"]].get("data", {})
            value = base64.b64decode(data[ref["key"]]).decode() if ref["key"] in data else value
        out[name] = value
    return out


def without_checksums(annotations):
    """Pod annotations minus checksum/* (the chart's rollout triggers)."""
    return {k: v for k, v in (annotations or {}).items() if not k.startswith("checksum/")} or None


def container(deployment):
    return deployment["spec"]["template"]["spec"]["containers"][0]


def env_map(deployment):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(deployment).get("env", [])}


def main():
    chart_dir, plain_dir = sys.argv[1], sys.argv[2]
    chart, chart_secrets = load_all(glob.glob(os.path.join(chart_dir, "**", "*.yaml"), recursive=True))
    plain, _ = load_all(sorted(glob.glob(os.path.join(plain_dir, "*.yaml")))
                        + [os.path.join(plain_dir, "autoscaling", "hpa.yaml")])
    checks = []

    cd, pd = chart["Deployment"], plain["Deployment"]
    chart_env, plain_env = resolve_secret_refs(env_map(cd), chart_secrets), env_map(pd)
    for name in sorted(set(chart_env) | set(plain_env)):
        checks.append(("env " + name, chart_env.get(name, "(unset)"), plain_env.get(name, "(unset)")))
    for field in ("startupProbe", "livenessProbe", "readinessProbe", "lifecycle", "ports",
                  "securityContext", "resources"):
        checks.append(("container " + field, container(cd).get(field), container(pd).get(field)))
    for field in ("securityContext", "terminationGracePeriodSeconds", "automountServiceAccountToken",
                  "enableServiceLinks"):
        checks.append(("pod " + field, cd["spec"]["template"]["spec"].get(field),
                       pd["spec"]["template"]["spec"].get(field)))
    # The chart's label selectors also carry the release (app.kubernetes.io/instance).
    spread = [[{k: v for k, v in c.items() if k != "labelSelector"}
               for c in d["spec"]["template"]["spec"].get("topologySpreadConstraints", [])] for d in (cd, pd)]
    checks.append(("pod topologySpreadConstraints (without selectors)", *spread))
    checks.append(("Deployment strategy", cd["spec"]["strategy"], pd["spec"]["strategy"]))
    checks.append(("pod annotations (without checksum/*)",
                   without_checksums(cd["spec"]["template"]["metadata"].get("annotations")),
                   without_checksums(pd["spec"]["template"]["metadata"].get("annotations"))))

    def spec_without(kind, *drop):
        return [{k: v for k, v in d["spec"].items() if k not in drop} for d in (chart[kind], plain[kind])]

    checks.append(("PodDisruptionBudget spec", *spec_without("PodDisruptionBudget", "selector")))
    checks.append(("HorizontalPodAutoscaler spec", *spec_without("HorizontalPodAutoscaler", "scaleTargetRef")))
    checks.append(("NetworkPolicy ingress, egress and policyTypes", *spec_without("NetworkPolicy", "podSelector")))
    checks.append(("ServiceAccount automountServiceAccountToken",
                   chart["ServiceAccount"].get("automountServiceAccountToken"),
                   plain["ServiceAccount"].get("automountServiceAccountToken")))

    failed = 0
    for what, in_chart, in_plain in checks:
        if in_chart == in_plain:
            print("ok   %s" % what)
        else:
            failed += 1
            print("FAIL %s differs:\n       chart:     %s\n       manifests: %s" % (what, in_chart, in_plain))
    print("RESULT passed=%d failed=%d" % (len(checks) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
