/** What happened to an object, as `kubectl get -w --output-watch-events` names it. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
