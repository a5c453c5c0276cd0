import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliError } from './errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `node:util` parseArgs with the CLI's error messages: an unknown flag, a flag without its value or an
 * unexpected argument becomes a one-line CliError that points at the command's `--help`.
 */
export function parseFlags<O extends Options>(
  args: readonly string[],
  options: O,
  command: string,
): {
  values: {
    [K in keyof O]?: O[K]['type'] extends 'boolean'
      ? boolean
      : O[K]['multiple'] extends true
        ? string[]
        : string;
  };
  positionals: string[];
} {
  const help = `see ${command} --help`;
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options,
      strict: true,
      allowPositionals: true,
    });
    return { values: values as any, positionals };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const message = e.message ?? String(err);
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
      throw new CliError(`unknown flag ${flag}; ${help}`);
    }
    if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const flag = /'(-[^' ,]+)/.exec(message)?.[1];
      if (flag && /argument missing|ambiguous/.test(message)) {
        throw new CliError(`flag ${flag} needs a value (${flag} VALUE or ${flag}=VALUE); ${help}`);
      }
      if (flag && /does not take an argument/.test(message)) {
        throw new CliError(`flag ${flag} does not take a value; ${help}`);
      }
    }
    throw new CliError(`${message.split('\n')[0]}; ${help}`);
  }
}

/** An integer flag in [min, max]. */
export function intFlag(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
    throw new CliError(
      `flag --${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
}
