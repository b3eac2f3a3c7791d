"""Validates Kubernetes manifests against the OpenAPI schemas kubernetes-validate ships.

Used by scripts/check-deploy.sh, run with the venv's Python. For every YAML document in the
given files and every requested Kubernetes version it calls kubernetes-validate's own
`validate(..., strict=True)`, the function behind `kubernetes-validate --strict`. The library
is called directly instead of the CLI because the CLI only *warns* (exit 0) about a kind it
has no schema for: here a kind without a schema fails, except the custom resources named in
--crd-kinds, which are written to --crd-out (JSON) for the CRD validator instead.

Prints one line per file and a last line `RESULT passed=N failed=M handed_on=K`
(N and M count resource x version checks). Exit status 1 if anything failed.
"""

import argparse
import json
import sys

from kubernetes_validate import utils


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="append", required=True,
                        help="Kubernetes version to validate against (repeat); 'latest' = newest known")
    parser.add_argument("--crd-kinds", default="",
                        help="comma-separated apiVersion/Kind pairs handed to the CRD validator")
    parser.add_argument("--crd-out", help="where to write the custom resources (JSON list)")
    parser.add_argument("files", nargs="+")
    return parser.parse_args()


def resource_name(doc):
    return "%s/%s" % (doc.get("kind", "?").lower(), (doc.get("metadata") or {}).get("name", "?"))


def main():
    args = parse_args()
    latest = utils.latest_version()
    versions = [latest if v == "latest" else v for v in args.version]
    crd_kinds = {k for k in args.crd_kinds.split(",") if k}
    passed = failed = 0
    handed_on = []
    for filename in args.files:
        problems, names = [], []
        for doc in utils.resources_from_file(filename):
            key = "%s/%s" % (doc.get("apiVersion"), doc.get("kind"))
            if key in crd_kinds:
                handed_on.append({"file": filename, "resource": doc})
                names.append(resource_name(doc) + " (CRD)")
                continue
            names.append(resource_name(doc))
            for version in versions:
                try:
                    utils.validate(doc, version, strict=True)
                    passed += 1
                except utils.ValidationError as e:
                    path = ".".join(str(p) for p in e.path)
                    problems.append("%s @ %s: %s: %s" % (resource_name(doc), version, path, e.message))
                    failed += 1
                except utils.SchemaNotFoundError as e:
                    problems.append("%s: no schema (%s)" % (resource_name(doc), e.message))
                    failed += 1
        if problems:
            print("FAIL %s" % filename)
            for p in problems:
                print("     %s" % p)
        else:
            print("ok   %s: %s" % (filename, ", ".join(names) or "(no resources)"))
    if args.crd_out:
        with open(args.crd_out, "w") as f:
            json.dump(handed_on, f)
    print("validated against Kubernetes %s (strict schemas of kubernetes-validate %s)"
          % (" and ".join(versions), utils.__version__))
    print("RESULT passed=%d failed=%d handed_on=%d" % (passed, failed, len(handed_on)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
