import { FleetplaneClient } from '../client/index.js';
import { PageHub } from './live/page-hub.js';
import type { HubMessage, TabMessage } from './live/page-messages.js';

/*
 * The dashboard's SharedWorker: every tab of the browser on this origin
 * follows its organizations through it, so a browser holds one page stream
 * per organization however many tabs are open (Chromium allows 6 HTTP/1.1
 * connections per origin; each tab used to hold two streams).
 */

/** What of a SharedWorker's global scope this uses (the DOM library the page is checked with lacks the worker's). */
interface SharedWorkerScope {
  readonly location: Location;
  addEventListener(type: 'connect', listener: (e: MessageEvent) => void): void;
}
declare const self: SharedWorkerScope;

// The browser sends the HttpOnly session cookie with same-origin requests from the worker too.
const client = new FleetplaneClient({ baseUrl: self.location.origin, fetch: (input, init) => fetch(input, { ...init, credentials: 'same-origin' }) });
const hub = new PageHub(client);

self.addEventListener('connect', (e) => {
  const port = e.ports[0];
  if (!port) return;
  const followed = new Map<string, (m: HubMessage) => void>();
  // One postMessage per task, not per event: a list of 10,000 devices is 10,000 adds, and each message is a
  // structured clone and an event in the tab. Bounded by what one task of the stream delivers.
  let batch: HubMessage[] = [];
  const send = (m: HubMessage): void => {
    if (batch.length === 0) {
      setTimeout(() => {
        const out = batch;
        batch = [];
        port.postMessage(out);
      }, 0);
    }
    batch.push(m);
  };
  const leaveAll = (): void => {
    for (const [org, l] of followed) hub.leave(org, l);
    followed.clear();
  };
  port.addEventListener('message', (ev: MessageEvent<TabMessage>) => {
    const m = ev.data;
    if (m.t === 'hello') {
      // Granted once the tab that holds it is gone (closed, crashed or navigated away): its streams go with it.
      void navigator.locks.request(m.lock, () => {
        leaveAll();
        port.close();
      });
    } else if (m.t === 'follow') {
      if (followed.has(m.org)) return;
      // One listener per organization: leaving must find this one, not another org's.
      const l = (msg: HubMessage): void => send(msg);
      followed.set(m.org, l);
      hub.follow(m.org, l);
    } else {
      const l = followed.get(m.org);
      if (!l) return;
      followed.delete(m.org);
      hub.leave(m.org, l);
    }
  });
  port.start();
});
