export * from './errors.js';
export * from './cli.js';
export * from './pod-printer.js';
export * from './nodelet-config.js';
export * from './kubelet-setup.js';
export * from './runtimes.js';
export * from './kubelet-command.js';
export * from './get-command.js';
