import { useEffect, useState } from 'preact/hooks';

/** A list a view shows and the writes it makes on it. */
export interface ListActions<T> {
  /** What `read` gave last; undefined until it first answered. */
  data: T | undefined;
  /** Why the last read failed, until one succeeds. */
  loadError: unknown;
  /** Why the last write failed (cleared when the next one starts). */
  error: unknown;
  /** What the last write did, in words (cleared when the next one starts). */
  saved: string | undefined;
  /** Runs a write whose result is what it did in words, then reads the list again, whatever the outcome. */
  act(write: () => Promise<string>): Promise<void>;
}

/** Reads a list on mount and whenever `deps` change, and runs writes on it with their outcome: the state every list section of the dashboard keeps. */
export function useListActions<T>(read: () => Promise<T>, deps: readonly unknown[]): ListActions<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const load = async (): Promise<void> => {
    try {
      setData(await read());
      setLoadError(undefined);
    } catch (err) {
      setLoadError(err);
    }
  };
  useEffect(() => void load(), deps);
  const act = async (write: () => Promise<string>): Promise<void> => {
    setError(undefined);
    setSaved(undefined);
    try {
      setSaved(await write());
    } catch (err) {
      setError(err);
    }
    await load();
  };
  return { data, loadError, error, saved, act };
}
