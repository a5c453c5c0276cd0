/**
 * An error the user can fix: a bad flag, a bad config file, a kubelet that cannot be reached. The CLI
 * prints its message as one line (`nodelet: <message>`) and exits with `exitCode`, without a stack trace.
 */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
