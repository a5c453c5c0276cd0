export * from './capability.js';
export * from './errors.js';
export * from './clock.js';
export * from './loop.js';
export * from './deadline.js';
export * from './backoff.js';
export * from './events.js';
export * from './bus.js';
export * from './logger.js';
export * from './plugin.js';
export * from './linker.js';
export * from './loader.js';
export * from './config.js';
export * from './kernel.js';
/** inversify's module and decorators, so a plugin's bindings need no dependency of their own. */
export { ContainerModule, inject, injectable, multiInject, optional } from 'inversify';
export * from './http-hardening.js';
