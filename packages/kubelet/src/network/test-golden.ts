// Test support (not part of the package's API): the golden cases of testdata/ (see its README.md).
import { readFileSync } from 'node:fs';
import type { Pod } from '@nodelet/api';
import type { PodNetworkSettings } from './pod-network.js';

export interface GoldenCase {
  name: string;
  source: string;
  settings: PodNetworkSettings;
  hostResolvConf: string;
  nodeHosts?: string;
  podIPs: string[];
  pod: Pod;
  warnings?: string[];
}

/** The testdata directory in the sources (tests run from dist/). */
export const TESTDATA = new URL('../../src/network/testdata/', import.meta.url);
export const goldenCases = (): GoldenCase[] =>
  (JSON.parse(readFileSync(new URL('cases.json', TESTDATA), 'utf8')) as { cases: GoldenCase[] }).cases;
