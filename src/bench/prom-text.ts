/**
 * Reads Prometheus text exposition: the sum of every sample of a metric
 * name (all label sets), or one label set when `labels` is given.
 */
export function promValue(text: string, name: string, labels?: Record<string, string>): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    let labelText = '';
    let valueText = rest.trim();
    if (rest[0] === '{') {
      const close = rest.indexOf('}');
      labelText = rest.slice(1, close);
      valueText = rest.slice(close + 1).trim();
    }
    if (labels && !Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) continue;
    const value = Number(valueText.split(' ')[0]);
    if (Number.isNaN(value)) continue;
    sum += value;
    found = true;
  }
  return found ? sum : Number.NaN;
}
