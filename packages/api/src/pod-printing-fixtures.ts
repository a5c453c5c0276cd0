/**
 * Builders of the pod-printing tests: pods as a kubelet reports them (JSON fixtures), and the loop that
 * checks kubectl's cells for each case.
 */
import test from 'ava';
import { podCells } from './pod-printing.js';
import type { Pod } from './types.js';

export const NOW = Date.parse('2026-01-01T12:00:00Z');
export const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString().replace('.000Z', 'Z');

const container = (name: string, image = 'busybox') => ({ name, image });

/** A pod as the kubelet's /pods returns it; `status` is spread over a Running base. */
export function pod(
  name: string,
  options: {
    containers?: string[];
    initContainers?: Array<{ name: string; restartPolicy?: string }>;
    status?: Record<string, unknown>;
    metadata?: Record<string, unknown>;
    spec?: Record<string, unknown>;
  } = {},
): Pod {
  return {
    metadata: { name, namespace: 'default', ...options.metadata },
    spec: {
      nodeName: 'node1',
      containers: (options.containers ?? ['app']).map((c) => container(c)),
      ...(options.initContainers
        ? { initContainers: options.initContainers.map((c) => ({ ...container(c.name), ...c })) }
        : {}),
      ...options.spec,
    },
    status: { phase: 'Running', podIP: '10.244.0.2', podIPs: [{ ip: '10.244.0.2' }], ...options.status },
  } as Pod;
}

export const running = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  ready: true,
  started: true,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { running: { startedAt: ago(5) } },
  ...extra,
});
export const waiting = (name: string, reason: string, extra: Record<string, unknown> = {}) => ({
  name,
  ready: false,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { waiting: { reason } },
  ...extra,
});
export const terminated = (
  name: string,
  t: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  name,
  ready: false,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { terminated: { startedAt: ago(20), finishedAt: ago(10), ...t } },
  ...extra,
});
export const readyCondition = (status: 'True' | 'False') => ({ type: 'Ready', status });
export const initializedCondition = (status: 'True' | 'False') => ({ type: 'Initialized', status });

export interface Case {
  title: string;
  pod: Pod;
  ready: string;
  status: string;
  restarts: string;
}

/** One test per case: READY, STATUS and RESTARTS as kubectl prints them. */
export function printPodCases(cases: Case[]): void {
  for (const c of cases) {
    test(`printPod: ${c.title}`, (t) => {
      const cells = podCells(c.pod, NOW);
      t.deepEqual(
        { ready: cells.ready, status: cells.status, restarts: cells.restarts },
        { ready: c.ready, status: c.status, restarts: c.restarts },
      );
    });
  }
}
