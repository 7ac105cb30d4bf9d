/**
 * A minimal browser for scripted logins: fetch with manual redirects, a cookie jar (host and
 * path matching, expiry), and HTML form submission. No JavaScript: the provider's pages need none.
 */

/** A page the browser landed on, or the redirect it stopped at (`stoppedAt`). */
export interface Page {
  readonly url: string;
  readonly status: number;
  readonly body: string;
  /** The redirect target the browser did not follow (it matched `stopAt`). */
  readonly stoppedAt: URL | undefined;
}

interface Cookie {
  readonly name: string;
  readonly value: string;
  readonly host: string;
  readonly path: string;
  readonly expiresAt: number | undefined;
}

export interface ParsedForm {
  readonly action: string;
  readonly method: string;
  readonly fields: Record<string, string>;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([a-zA-Z_:][-\w:.]*)\s*=\s*"([^"]*)"/g)) {
    if (m[1] !== undefined && m[2] !== undefined) out[m[1].toLowerCase()] = decodeEntities(m[2]);
  }
  return out;
}

/** The form with this id on the page (its action resolved against the page URL), or undefined. */
export function findForm(page: Page, id: string): ParsedForm | undefined {
  for (const m of page.body.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributes(m[1] ?? '');
    if (attrs.id !== id) continue;
    const fields: Record<string, string> = {};
    for (const input of (m[2] ?? '').matchAll(/<input\b([^>]*)>/gi)) {
      const a = attributes(input[1] ?? '');
      if (a.name !== undefined) fields[a.name] = a.value ?? '';
    }
    return { action: new URL(attrs.action ?? page.url, page.url).toString(), method: (attrs.method ?? 'get').toUpperCase(), fields };
  }
  return undefined;
}

/** The text of the element with this id, or undefined. */
export function textById(page: Page, id: string): string | undefined {
  const m = new RegExp(`<(\\w+)[^>]*\\bid="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(page.body);
  return m?.[2] === undefined ? undefined : decodeEntities(m[2]);
}

export class Browser {
  readonly #jar = new Map<string, Cookie>();

  /** @param stopAt redirects to URLs it accepts are not followed (e.g. the relying party's callback). */
  constructor(private readonly stopAt: (url: URL) => boolean = () => false) {}

  get(url: string): Promise<Page> {
    return this.#navigate(url, 'GET', undefined);
  }

  /** Submits the form `id` of `page` with its fields, overridden by `fields`. */
  submit(page: Page, id: string, fields: Record<string, string> = {}): Promise<Page> {
    const form = findForm(page, id);
    if (!form) throw new Error(`no form ${JSON.stringify(id)} on ${page.url} (HTTP ${page.status}):\n${page.body.slice(0, 2000)}`);
    const body = new URLSearchParams({ ...form.fields, ...fields });
    if (form.method === 'GET') {
      const url = new URL(form.action);
      for (const [k, v] of body) url.searchParams.set(k, v);
      return this.#navigate(url.toString(), 'GET', undefined);
    }
    return this.#navigate(form.action, 'POST', body);
  }

  /** The value of cookie `name` the jar would send to `url`, or undefined. */
  cookieValue(url: string, name: string): string | undefined {
    return this.#cookiesFor(new URL(url)).find((c) => c.name === name)?.value;
  }

  /** Names of the cookies the jar holds for `url` (for assertions). */
  cookieNames(url: string): string[] {
    return this.#cookiesFor(new URL(url)).map((c) => c.name);
  }

  async #navigate(start: string, startMethod: 'GET' | 'POST', startBody: URLSearchParams | undefined): Promise<Page> {
    let url = new URL(start);
    let method = startMethod;
    let body = startBody;
    for (let hop = 0; hop < 20; hop += 1) {
      const headers: Record<string, string> = { 'user-agent': 'fleetplane-test-browser' };
      const cookies = this.#cookiesFor(url);
      if (cookies.length > 0) headers.cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
      const res = await fetch(url, { method, headers, redirect: 'manual', ...(body ? { body: body.toString() } : {}) });
      for (const line of res.headers.getSetCookie()) this.#store(url, line);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location !== null) {
        await res.body?.cancel();
        const next = new URL(location, url);
        if (this.stopAt(next)) return { url: url.toString(), status: res.status, body: '', stoppedAt: next };
        if (res.status !== 307 && res.status !== 308) {
          method = 'GET';
          body = undefined;
        }
        url = next;
        continue;
      }
      return { url: url.toString(), status: res.status, body: await res.text(), stoppedAt: undefined };
    }
    throw new Error(`more than 20 redirects from ${start}`);
  }

  #store(url: URL, line: string): void {
    const [pair = '', ...attrs] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) return;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const defaultPath = url.pathname.lastIndexOf('/') > 0 ? url.pathname.slice(0, url.pathname.lastIndexOf('/')) : '/';
    let path = defaultPath;
    let expiresAt: number | undefined;
    for (const attr of attrs) {
      const [k = '', ...rest] = attr.split('=');
      const v = rest.join('=').trim();
      const key = k.trim().toLowerCase();
      if (key === 'path' && v.startsWith('/')) path = v;
      else if (key === 'max-age') expiresAt = Date.now() + Number(v) * 1000;
      else if (key === 'expires' && expiresAt === undefined) expiresAt = Date.parse(v);
    }
    const key = `${url.hostname}|${path}|${name}`;
    if (expiresAt !== undefined && expiresAt <= Date.now()) this.#jar.delete(key);
    else this.#jar.set(key, { name, value, host: url.hostname, path, expiresAt });
  }

  #cookiesFor(url: URL): Cookie[] {
    const now = Date.now();
    return [...this.#jar.values()]
      .filter((c) => c.host === url.hostname && (c.expiresAt === undefined || c.expiresAt > now))
      .filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .sort((a, b) => b.path.length - a.path.length);
  }
}
