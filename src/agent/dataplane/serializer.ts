/**
 * Runs async operations one at a time, in call order.
 */
import { DataplaneError } from './errors.js';

/** At most this many operations wait; more is a caller bug (one reconcile loop drives a dataplane). */
export const MAX_QUEUED_OPERATIONS = 16;

export type Serializer = <T>(operation: () => Promise<T>) => Promise<T>;

/** Beyond MAX_QUEUED_OPERATIONS waiting calls, a call is rejected at once with DataplaneError. */
export function createSerializer(): Serializer {
  let tail: Promise<unknown> = Promise.resolve();
  let queued = 0;
  return <T>(operation: () => Promise<T>): Promise<T> => {
    if (queued >= MAX_QUEUED_OPERATIONS) {
      return Promise.reject(new DataplaneError('validate', `more than ${MAX_QUEUED_OPERATIONS} dataplane operations queued`));
    }
    queued++;
    const done = tail.then(() => operation()).finally(() => {
      queued--;
    });
    // The next operation only waits for this one; its outcome is the caller's.
    tail = done.catch(() => undefined);
    return done;
  };
}
