import type { AttributeValue } from './types.js'

/** Attributes under construction by a decoder. */
export type MutableAttributes = Record<string, AttributeValue>

// Attribute objects inherit from an empty object with no prototype: keys such as "__proto__" or
// "toString" are plain keys and nothing is inherited, while V8 keeps the objects in fast mode
// (Object.create(null) would make dictionaries).
const ATTRIBUTES_PROTO: object = Object.freeze(Object.create(null) as object)

/**
 * A new, empty attributes object for the decoders.
 *
 * @example
 * ```ts
 * const attrs = newAttributes()
 * attrs['__proto__'] = 'a plain key'
 * ```
 */
export function newAttributes(): MutableAttributes {
  return Object.create(ATTRIBUTES_PROTO) as MutableAttributes
}
