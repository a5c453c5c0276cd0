#!/usr/bin/env node
// Derives the compact golden data of the RBAC bootstrap policy (src/authorization/testdata/
// bootstrap-policy-golden.json) from upstream's YAML: the files of kubernetes/kubernetes
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata.
//
//   node scripts/derive-rbac-golden.mjs DIR [file=commit ...] > src/authorization/testdata/bootstrap-policy-golden.json
//
// DIR holds cluster-roles.yaml, cluster-role-bindings.yaml, controller-roles.yaml,
// controller-role-bindings.yaml, namespace-roles.yaml and namespace-role-bindings.yaml (a missing file
// is skipped); each `file=commit` records the upstream commit a file was taken from.
//
// Rules, subjects and labels are written in the compact form of src/authorization/golden-encoding.ts
// (build first: npx tsc -b); a roleRef is `<Kind> <name>`.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { parse } from 'yaml';
import {
  encodeLabels,
  encodeRule,
  encodeSelectors,
  encodeSubject,
} from '../dist/authorization/golden-encoding.js';

const [dir, ...pins] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: derive-rbac-golden.mjs DIR [file=commit ...]\n');
  process.exit(2);
}

function role(item) {
  const out = {};
  const labels = encodeLabels(item.metadata.labels);
  if (labels.length > 0) out.labels = labels;
  const selectors = item.aggregationRule?.clusterRoleSelectors;
  if (selectors) out.aggregationRule = encodeSelectors(selectors);
  out.rules = (item.rules ?? []).map(encodeRule);
  return out;
}

function binding(item) {
  return {
    roleRef: `${item.roleRef.kind} ${item.roleRef.name}`,
    subjects: (item.subjects ?? []).map(encodeSubject),
  };
}

const key = (item) =>
  item.metadata.namespace ? `${item.metadata.namespace}/${item.metadata.name}` : item.metadata.name;

function read(file, convert) {
  const path = join(dir, file);
  if (!existsSync(path)) return undefined;
  const list = parse(readFileSync(path, 'utf8'));
  return Object.fromEntries((list.items ?? []).map((item) => [key(item), convert(item)]));
}

const golden = {
  about:
    'RBAC bootstrap policy of upstream Kubernetes, derived by scripts/derive-rbac-golden.mjs from ' +
    'plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata of kubernetes/kubernetes',
  commits: Object.fromEntries(pins.map((p) => p.split('='))),
  clusterRoles: read('cluster-roles.yaml', role),
  clusterRoleBindings: read('cluster-role-bindings.yaml', binding),
  controllerRoles: read('controller-roles.yaml', role),
  controllerRoleBindings: read('controller-role-bindings.yaml', binding),
  namespaceRoles: read('namespace-roles.yaml', role),
  namespaceRoleBindings: read('namespace-role-bindings.yaml', binding),
};
process.stdout.write(`${JSON.stringify(golden, null, 2)}\n`);
