import type { NodeletPlugin } from '@nodelet/kernel';

/** The CRI endpoint settings a runtime plugin's config takes, when its schema has them (runtime-cri and presets). */
export interface CriEndpointSettings {
  runtimeEndpoint?: string;
  imageEndpoint?: string;
  runtimeRequestTimeoutMs?: number;
}

/** True when the plugin's config schema has a `runtimeEndpoint` field (a CRI runtime over gRPC). */
export function takesCriEndpoint(plugin: NodeletPlugin<any>): boolean {
  const schema = plugin.manifest.configSchema as { properties?: Record<string, unknown> } | undefined;
  return schema?.properties?.runtimeEndpoint !== undefined;
}

/**
 * The runtime plugin's configuration: its section of the config file over the KubeletConfiguration's
 * CRI settings (containerRuntimeEndpoint, imageServiceEndpoint, runtimeRequestTimeout), under the
 * upstream flags (--container-runtime-endpoint, --image-service-endpoint). Plugins without those
 * fields get their section unchanged.
 */
export function runtimePluginConfig(
  plugin: NodeletPlugin<any>,
  section: Record<string, unknown>,
  kubeletConfig: CriEndpointSettings,
  flags: CriEndpointSettings,
): Record<string, unknown> {
  if (!takesCriEndpoint(plugin)) return section;
  const defined = (o: CriEndpointSettings) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ''));
  return { ...defined(kubeletConfig), ...section, ...defined(flags) };
}
