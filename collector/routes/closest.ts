/**
 * "Did you mean …": the known names closest to a misspelt one, by edit distance (Levenshtein), for error
 * messages that should point at the right name rather than only say the wrong one is wrong.
 */

/** Edit distance between two strings (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = row
  }
  return prev[b.length]!
}

/**
 * The names among `known` within a third of `name`'s length (at least 2) edits of it, closest first, at most
 * `max`; a case-insensitive match or a name containing it counts as closest.
 *
 * @example closestNames('demo-chta', ['demo-chat', 'demo-vision']) // ['demo-chat']
 */
export function closestNames(name: string, known: readonly string[], max = 3): string[] {
  const lower = name.toLowerCase()
  const limit = Math.max(2, Math.floor(name.length / 3))
  return known
    .map((k) => {
      const kl = k.toLowerCase()
      const d = kl === lower || (lower.length >= 3 && kl.includes(lower)) ? 0 : editDistance(lower, kl)
      return { k, d }
    })
    .filter((x) => x.d <= limit)
    .sort((x, y) => x.d - y.d || x.k.localeCompare(y.k))
    .slice(0, max)
    .map((x) => x.k)
}

/**
 * The sentence an error message ends with: the closest names, else the names there are (a few), else none.
 *
 * @example didYouMean('demo-chta', ['demo-chat']) // "; did you mean 'demo-chat'?"
 */
export function didYouMean(name: string, known: readonly string[], what = 'service'): string {
  if (known.length === 0) return `; no ${what} has reported yet`
  const close = closestNames(name, known)
  if (close.length > 0) return `; did you mean ${close.map((k) => `'${k}'`).join(' or ')}?`
  const some = [...known].sort().slice(0, 5)
  return `; ${what}s that report: ${some.join(', ')}${known.length > some.length ? ', …' : ''}`
}
