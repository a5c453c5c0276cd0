import { type Clock, NodeletError } from '@nodelet/kernel';
import { writeFileSync } from 'node:fs';
import { ContainerState, CriAnnotations } from '@nodelet/cri';
import { SIGKILL_EXIT_CODE } from './behavior.js';
import { msToNs } from './cri-log.js';
import type { ContainerRecord } from './records.js';

/** Exit code and reason containerd gives a container whose process never started. */
export const START_ERROR_EXIT_CODE = 128;
export const START_ERROR_REASON = 'StartError';

/**
 * What happens to a container's process over time: scripted exits, the SIGTERM → SIGKILL sequence
 * of StopContainer, kills, and failed starts. Each container holds at most one scripted-exit timer
 * and one termination timer, both on the clock and both cancelled the moment it exits.
 */
export class ContainerLifecycle {
  constructor(private readonly clock: Clock) {}

  /** Runs `c`'s scripted exit (exitAfter), if it has one. */
  scheduleExit(c: ContainerRecord): void {
    const { exitAfterMs, exitCode, exitReason } = c.behavior;
    if (exitAfterMs === undefined) return;
    c.cancelExit = this.clock.setTimeout(() => {
      c.cancelExit = undefined;
      this.exit(c, exitCode, exitReason);
    }, exitAfterMs);
  }

  /** The container ends now: EXITED with `exitCode`; waiting stops resolve; timers are cancelled. */
  exit(c: ContainerRecord, exitCode: number, reason?: string, message?: string): void {
    if (c.state === ContainerState.CONTAINER_EXITED) return;
    c.state = ContainerState.CONTAINER_EXITED;
    const now = msToNs(this.clock.now());
    const floor = c.startedAt > c.createdAt ? c.startedAt : c.createdAt;
    c.finishedAt = now > floor ? now : floor; // never before it was created or started
    c.exitCode = exitCode;
    c.reason = reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.message = message ?? '';
    writeTerminationMessage(c);
    this.release(c);
  }

  /** StartContainer failed (failStart, a log file that cannot be opened): EXITED 128 StartError. */
  startFailed(c: ContainerRecord, message: string): void {
    this.exit(c, START_ERROR_EXIT_CODE, START_ERROR_REASON, message);
  }

  /** SIGKILL now: a running container exits 137; one still starting never runs (StartError). */
  kill(c: ContainerRecord, why: string): void {
    if (c.starting) {
      const { cancel, reject } = c.starting;
      c.starting = undefined;
      cancel();
      const message = `container "${c.id}" did not start: ${why} while it was starting`;
      this.startFailed(c, message);
      reject(new NodeletError('Internal', message));
    } else if (c.state === ContainerState.CONTAINER_RUNNING) {
      this.exit(c, SIGKILL_EXIT_CODE);
    }
  }

  /** Ends the container `inMs` from now with `exitCode`, unless an earlier end is already due. */
  terminateIn(c: ContainerRecord, inMs: number, exitCode: number): void {
    const atMs = this.clock.now() + inMs;
    if (c.termination && c.termination.atMs <= atMs) return;
    c.termination?.cancel();
    const cancel = this.clock.setTimeout(() => {
      c.termination = undefined;
      this.exit(c, exitCode);
    }, inMs);
    c.termination = { atMs, exitCode, cancel };
  }

  /** Resolves when the container has exited (or is removed). */
  exited(c: ContainerRecord): Promise<void> {
    if (c.state === ContainerState.CONTAINER_EXITED) return Promise.resolve();
    return new Promise<void>((resolve) => (c.waiters ??= []).push(resolve));
  }

  /** Cancels the container's timers and lets whoever waits for its exit go on. */
  release(c: ContainerRecord): void {
    c.cancelExit?.();
    c.cancelExit = undefined;
    c.termination?.cancel();
    c.termination = undefined;
    const waiters = c.waiters;
    c.waiters = undefined;
    if (waiters) for (const resolve of waiters) resolve();
  }
}

/**
 * A scripted termination message, written as the process ends to the host file of the mount at the
 * container's termination-message path, as a real process writes its /dev/termination-log. Without
 * such a mount there is nowhere to write, as in a real container whose file is not mounted.
 */
function writeTerminationMessage(c: ContainerRecord): void {
  const text = c.behavior.terminationMessage;
  if (text === undefined) return;
  const path = c.config.annotations[CriAnnotations.ContainerTerminationMessagePath] ?? '/dev/termination-log';
  const mount = c.config.mounts.find((m) => m.containerPath === path);
  if (!mount) return;
  try {
    writeFileSync(mount.hostPath, text);
  } catch {
    // a file the kubelet removed meanwhile: the message is lost, as a real container's would be
  }
}
