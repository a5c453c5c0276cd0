/** Configuration of the cni-exec plugin (the `plugins.cni-exec` section of the config file). */
export interface CniExecConfig {
  /** Where network configurations live; the lexically first `.conflist`/`.conf`/`.json` is used. */
  confDir: string;
  /** Where plugin binaries are looked up, in order; also passed to plugins as `CNI_PATH`. */
  binDirs: string[];
  /** Where ADD results are kept for DEL and CHECK (one file per attachment). */
  cacheDir: string;
  /** How long one plugin execution may take before it is killed, in milliseconds. */
  execTimeoutMs: number;
}

export const DEFAULT_CONFIG: Readonly<CniExecConfig> = Object.freeze({
  confDir: '/etc/cni/net.d',
  binDirs: ['/usr/lib/cni', '/opt/cni/bin'],
  cacheDir: '/var/lib/cni/nodelet',
  execTimeoutMs: 60_000,
});

/** JSON Schema of CniExecConfig, with its defaults (the kernel fills them in). */
export const cniExecConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    confDir: {
      type: 'string',
      minLength: 1,
      default: DEFAULT_CONFIG.confDir,
      description: 'directory of CNI network configurations (.conflist, .conf, .json)',
    },
    binDirs: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      minItems: 1,
      default: [...DEFAULT_CONFIG.binDirs],
      description: 'directories searched for CNI plugin binaries, in order',
    },
    cacheDir: {
      type: 'string',
      minLength: 1,
      default: DEFAULT_CONFIG.cacheDir,
      description: 'directory where ADD results are cached for DEL and CHECK',
    },
    execTimeoutMs: {
      type: 'integer',
      minimum: 1,
      default: DEFAULT_CONFIG.execTimeoutMs,
      description: 'milliseconds one plugin execution may take before it is killed',
    },
  },
} as const;
