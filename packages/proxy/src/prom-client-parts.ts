import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

/**
 * The four prom-client classes the proxy's metrics use, from their own modules. The package's entry
 * also loads its summaries (tdigest), pushgateway, cluster aggregation, default process metrics and
 * @opentelemetry/api: ~0.1 s of CPU and several MiB at each proxy start, for nothing the proxy serves.
 * The package has no `exports` map, so its `lib/` modules are its public files as well.
 */
const require = createRequire(import.meta.url);

export const Registry: typeof PromClient.Registry = require('prom-client/lib/registry');
export const Counter: typeof PromClient.Counter = require('prom-client/lib/counter');
export const Gauge: typeof PromClient.Gauge = require('prom-client/lib/gauge');
export const Histogram: typeof PromClient.Histogram = require('prom-client/lib/histogram');
export type Registry = PromClient.Registry;
export type Counter = PromClient.Counter;
export type Gauge = PromClient.Gauge;
export type Histogram = PromClient.Histogram;
