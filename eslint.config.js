// Lint configuration: typescript-eslint's recommended rules over every package's sources, and the layering
// of docs/architecture.md as import rules (cli → kubelet | proxy | controlplane → kernel + capability
// packages → nothing of ours; plugins import kernel and capability packages, never each other).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Tests, their harnesses and helpers may import what they exercise, plugins included. */
const testFiles = ['**/*.test.ts', '**/test-*.ts', '**/testing/**', '**/e2e-*/**'];
const plugins = ['@nodelet/runtime-*', '@nodelet/proxy-*', '@nodelet/cni-exec', '@nodelet/cni-exec/*'];
const layering = (patterns, message) => ({
  'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }] }],
});

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/src/gen/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/cli/**', 'packages/kernel/**', ...testFiles],
    rules: layering(
      plugins,
      'a package never imports a plugin: use the capability (the CLI composes plugins)',
    ),
  },
  {
    files: ['packages/kernel/src/**/*.ts'],
    ignores: testFiles,
    rules: layering(['@nodelet/*'], 'the kernel imports nothing of ours: a domain declares its own types'),
  },
  // A plugin never imports another plugin; the containerd and CRI-O presets configure runtime-cri
  // (docs/architecture.md, "Presets").
  ...[
    'runtime-fake',
    'runtime-cri',
    'cni-exec',
    'proxy-iptables',
    'proxy-nftables',
    'proxy-ipvs',
    'proxy-userspace',
  ].map((name) => ({
    files: [`plugins/${name}/src/**/*.ts`],
    ignores: testFiles,
    rules: layering(plugins, 'a plugin never imports another plugin: use the capability'),
  })),
  ...['runtime-containerd', 'runtime-crio'].map((name) => ({
    files: [`plugins/${name}/src/**/*.ts`],
    ignores: testFiles,
    rules: layering(
      plugins
        .filter((p) => p !== '@nodelet/runtime-*')
        .concat(['@nodelet/runtime-fake', '@nodelet/runtime-containerd', '@nodelet/runtime-crio']),
      'a preset imports only the plugin it presets (runtime-cri)',
    ),
  })),
);
