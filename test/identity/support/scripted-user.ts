import { findForm, textById, type Browser, type Page } from './browser.js';

function unexpected(page: Page, what: string): Error {
  return new Error(`${what}: ${page.url} answered HTTP ${page.status}:\n${page.body.slice(0, 1500)}`);
}

/** Signs in as `username` and consents, on whatever the provider shows, until `done` says so. */
async function signInAndConsent(browser: Browser, first: Page, username: string, done: (page: Page) => boolean): Promise<Page> {
  let page = first;
  for (let step = 0; step < 6; step += 1) {
    if (done(page)) return page;
    if (findForm(page, 'login')) page = await browser.submit(page, 'login', { username });
    else if (findForm(page, 'confirm')) page = await browser.submit(page, 'confirm');
    else throw unexpected(page, 'neither a login nor a consent page');
  }
  throw unexpected(page, 'the login did not finish in 6 steps');
}

/**
 * The user in a browser: opens the authorization URL, signs in as `username`, consents, and is
 * sent back to the relying party; returns that callback URL (the browser stops there).
 */
export async function loginInBrowser(browser: Browser, authorizationUrl: string, username: string): Promise<URL> {
  const page = await signInAndConsent(browser, await browser.get(authorizationUrl), username, (p) => p.stoppedAt !== undefined);
  if (!page.stoppedAt) throw unexpected(page, 'no callback');
  return page.stoppedAt;
}

/**
 * The user approving a device login: opens the verification URI, enters the user code, checks
 * that the page shows the same code, confirms (or aborts with `deny`), signs in as `username` and
 * consents. Returns the provider's last page.
 */
export async function approveDevice(browser: Browser, verificationUri: string, userCode: string, username: string, options: { deny?: boolean } = {}): Promise<Page> {
  let page = await browser.get(verificationUri);
  page = await browser.submit(page, 'op.deviceInputForm', { user_code: userCode });
  const shown = textById(page, 'user-code');
  if (shown !== userCode) throw unexpected(page, `the confirmation page shows ${JSON.stringify(shown)}, not the code ${userCode}`);
  page = await browser.submit(page, 'op.deviceConfirmForm', options.deny ? { abort: 'yes' } : {});
  if (options.deny) return page;
  return signInAndConsent(browser, page, username, (p) => textById(p, 'device-success') !== undefined);
}
