import { SharedInformers, type BackoffPolicy, type InformerLogger } from '../../client/index.js';
import type { CtlContext } from './context.js';
import { describeError, OutageLines } from './describe-error.js';

/** Reconnect timing of ctl's watches: a person is waiting, and one command line is no herd. */
export const CLI_BACKOFF: Partial<BackoffPolicy> = { initialMs: 500, maxMs: 5_000 };

/** Failures are told through statuses (see followInformers), not logged. */
const quiet: InformerLogger = { warn: () => undefined, error: () => undefined };

export function cliInformers(ctx: CtlContext, org: string): SharedInformers {
  return new SharedInformers(ctx.client, org, { backoff: CLI_BACKOFF, logger: quiet });
}

export interface FollowHooks {
  /** Called once, at the first sync, between two events: the caches are exactly the listing. */
  onSynced?: () => void;
}

/**
 * Runs `informers` until Ctrl-C (`ctx.signal` aborts: resolves) or until
 * they stop for good (401, 403, 404: rejects with the error). Across server
 * restarts and broken connections they resume by themselves; stderr says
 * so once per outage (OutageLines).
 */
export function followInformers(ctx: CtlContext, informers: SharedInformers, hooks: FollowHooks = {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let synced = false;
    const outage = new OutageLines((line) => ctx.stderr.write(line));
    informers.onError((error, context) => {
      if (context.source === 'handler') ctx.stderr.write(`error: showing a ${context.kind} change failed: ${describeError(error)}\n`);
    });
    informers.onStatus((status) => {
      switch (status.type) {
        case 'retrying':
          outage.retrying(status.delayMs, status.error);
          return;
        case 'syncing':
        case 'synced':
          outage.back();
          if (status.type === 'synced' && !synced) {
            synced = true;
            try {
              hooks.onSynced?.();
            } catch (err) {
              reject(err);
              void informers.stop();
            }
          }
          return;
        case 'failed':
          return reject(status.error);
        case 'stopped':
          return resolve();
        case 'starting':
          return;
      }
    });
    informers.start(ctx.signal);
  });
}
