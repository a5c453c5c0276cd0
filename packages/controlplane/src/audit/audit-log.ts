import type { IncomingMessage } from 'node:http';
import type { Clock, Logger } from '@nodelet/kernel';
import { AuditLogWriter } from './log-writer.js';
import { loadPolicy } from './policy.js';
import { Auditor } from './request-audit.js';

export interface AuditLogOptions {
  /** kube-apiserver's --audit-log-path: a file, or `-` for stdout. */
  path?: string;
  /** kube-apiserver's --audit-policy-file: an audit.k8s.io/v1 Policy. */
  policyFile?: string;
}

export interface AuditLog {
  auditor: Auditor;
  close(): Promise<void>;
}

/**
 * The audit log of the control plane, off unless both the log path and the policy are given (upstream
 * logs nothing without a policy; here one without the other is refused, so a typo does not silently
 * turn auditing off). The policy is read whole before the log is opened.
 */
export async function openAuditLog(
  options: AuditLogOptions,
  deps: { clock: Clock; logger: Logger; bodyOf: (req: IncomingMessage) => Buffer | undefined },
): Promise<AuditLog | undefined> {
  if (!options.path && !options.policyFile) return undefined;
  if (!options.path || !options.policyFile) {
    throw new Error(
      options.path
        ? `the audit log ${options.path} needs an audit policy file (--audit-policy-file): without one nothing is logged`
        : `the audit policy ${options.policyFile} needs an audit log path (--audit-log-path FILE, or - for stdout)`,
    );
  }
  const policy = await loadPolicy(options.policyFile);
  const writer = await AuditLogWriter.open({ path: options.path, logger: deps.logger });
  deps.logger.info('audit log enabled', {
    path: options.path,
    policy: options.policyFile,
    rules: policy.rules.length,
  });
  return {
    auditor: new Auditor({ policy, sink: writer, clock: deps.clock, bodyOf: deps.bodyOf }),
    close: () => writer.close(),
  };
}
