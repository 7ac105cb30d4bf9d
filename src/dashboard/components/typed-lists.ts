import { TAG_PREFIX } from '../../protocol/wire.js';

/** What an operator types as a list (tags, CIDRs, resolvers): items separated by commas or spaces, blanks dropped. */
export function typedList(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

/** A tag as typed, with or without its `tag:` prefix, as the API takes it. */
export function asTag(text: string): string {
  const t = text.trim();
  return t.startsWith(TAG_PREFIX) ? t : `${TAG_PREFIX}${t}`;
}
