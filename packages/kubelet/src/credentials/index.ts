export * from './keyring.js';
export * from './docker-config.js';
export * from './pull-secrets.js';
