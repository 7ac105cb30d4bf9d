/**
 * Running the system tools the Linux dataplane drives (`ip`, `wg`, `nft`,
 * `wireguard-go`): never through a shell, with a time and output limit.
 */
import { execFile } from 'node:child_process';
import { CommandError } from './errors.js';

export interface RunOptions {
  /** Written to the command's stdin (e.g. a private key); never logged or put in errors. */
  input?: string;
  /** Kills the command when aborted. */
  signal?: AbortSignal;
  /** Variables set (over the inherited environment) for this command. */
  env?: Readonly<Record<string, string>>;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs one command. Resolves when it exits 0; otherwise rejects with
 * CommandError (also when it can't start, times out, overflows the output
 * limit or is aborted).
 */
export interface CommandRunner {
  run(command: string, args: readonly string[], options?: RunOptions): Promise<CommandResult>;
}

export interface ExecRunnerOptions {
  /**
   * Prepended to every command, e.g. `['ip', 'netns', 'exec', 'ns1']` to run
   * inside a network namespace. Empty by default.
   */
  prefix?: readonly string[];
  /** Per command; the command is killed after it. Default 15 s. */
  timeoutMs?: number;
  /** stdout+stderr bytes kept per stream; beyond it the command is killed and fails. Default 32 MiB. */
  maxOutputBytes?: number;
}

/** A CommandRunner on child_process.execFile. */
export function createExecRunner(options: ExecRunnerOptions = {}): CommandRunner {
  const prefix = options.prefix ?? [];
  const timeout = options.timeoutMs ?? 15_000;
  const maxBuffer = options.maxOutputBytes ?? 32 * 1024 * 1024;
  return {
    run(command, args, runOptions = {}) {
      const [file, ...pre] = prefix.length > 0 ? prefix : [command];
      const fullArgs = prefix.length > 0 ? [...pre, command, ...args] : [...args];
      return new Promise<CommandResult>((resolve, reject) => {
        const child = execFile(
          file ?? command,
          fullArgs,
          {
            encoding: 'utf8',
            timeout,
            maxBuffer,
            signal: runOptions.signal,
            windowsHide: true,
            ...(runOptions.env ? { env: { ...process.env, ...runOptions.env } } : {}),
          },
          (error, stdout, stderr) => {
            if (!error) {
              resolve({ stdout, stderr });
              return;
            }
            const code = typeof error.code === 'number' ? error.code : null;
            reject(new CommandError(command, args, code, stderr || error.message, { cause: error }));
          },
        );
        // An EPIPE from a command that exits without reading its input shows up as its exit status instead.
        child.stdin?.on('error', () => undefined);
        child.stdin?.end(runOptions.input ?? '');
      });
    },
  };
}
