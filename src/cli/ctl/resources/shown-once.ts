import type { CtlContext } from '../context.js';

/** Reminds people, on stderr, that a secret just printed can't be read again. */
export function shownOnce(ctx: CtlContext, what: string): void {
  if (ctx.out.forPeople) ctx.stderr.write(`note: the ${what} is shown only this once; store it now\n`);
}
