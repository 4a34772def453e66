import { inflateSync } from 'node:zlib'

/**
 * Bounded work per byte for encoded histograms: before a histogram is decoded (which allocates a counts
 * array sized by its header), its header is read and checked against tailguard's one configuration, with
 * decompression itself capped. A 60-byte encoding claiming 5 significant digits up to 2^52 would make the
 * decoder allocate ~36 MB; here it costs one small inflate and is refused.
 *
 * The format is HdrHistogram's V2 compressed encoding: int32 cookie `0x1c849304 | wordsize`, int32 length of
 * a zlib stream, whose content is the V2 encoding: int32 cookie `0x1c849303 | wordsize`, int32 payload
 * length, int32 normalizing index offset, int32 significant digits, int64 lowest discernible value, int64
 * highest trackable value, float64 conversion ratio, then the ZigZag-LEB128 counts.
 */

const V2_ENCODING_COOKIE_BASE = 0x1c849303
const V2_COMPRESSED_COOKIE_BASE = 0x1c849304
const HEADER_BYTES = 40

/** What an encoding's header must say to be decoded. */
export interface HistogramHeaderLimits {
  readonly digits: number
  /** When set, any precision from `digits` to this is accepted (reading rows stored before the strict check). */
  readonly maxDigits?: number
  readonly lowest: number
  /** Largest highest-trackable value accepted (bounds the counts array the decoder allocates). */
  readonly maxHighest: number
  /** Largest decompressed encoding accepted, bytes. */
  readonly maxDecodedBytes: number
}

/** The fields of a V2 encoding header. */
export interface HistogramHeader {
  readonly digits: number
  readonly lowest: number
  readonly highest: number
  readonly payloadBytes: number
}

/**
 * Reads and checks the header of a compressed base64 histogram without decoding its counts. Returns the
 * header and the inflated encoding (whose counts the caller may then walk), or why it is refused.
 *
 * @example
 * ```ts
 * const r = checkHistogramHeader(wire, { digits: 3, lowest: 1, maxHighest: 2 ** 32, maxDecodedBytes: 256 * 1024 })
 * if (!r.ok) throw new BadRequest(r.error)
 * ```
 */
export function checkHistogramHeader(
  encoded: string,
  limits: HistogramHeaderLimits,
): { ok: true; header: HistogramHeader; decoded: Buffer } | { ok: false; error: string } {
  const bytes = Buffer.from(encoded.trim(), 'base64')
  if (bytes.length < 8) return { ok: false, error: 'not a compressed HdrHistogram encoding (too short)' }
  const cookie = bytes.readInt32BE(0)
  if ((cookie & ~0xf0) !== V2_COMPRESSED_COOKIE_BASE)
    return { ok: false, error: 'not a compressed HdrHistogram V2 encoding (bad cookie)' }
  const compressedLength = bytes.readInt32BE(4)
  if (compressedLength < 0 || compressedLength > bytes.length - 8)
    return { ok: false, error: `compressed length ${compressedLength} does not match the data` }
  let raw: Buffer
  try {
    raw = inflateSync(bytes.subarray(8, 8 + compressedLength), {
      maxOutputLength: limits.maxDecodedBytes,
    })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_BUFFER_TOO_LARGE')
      return { ok: false, error: `decodes to more than ${limits.maxDecodedBytes} bytes` }
    return { ok: false, error: `the zlib stream is invalid (${(err as Error).message})` }
  }
  if (raw.length < HEADER_BYTES) return { ok: false, error: 'the encoding is shorter than its header' }
  if ((raw.readInt32BE(0) & ~0xf0) !== V2_ENCODING_COOKIE_BASE)
    return { ok: false, error: 'not an HdrHistogram V2 encoding (bad inner cookie)' }
  const header: HistogramHeader = {
    payloadBytes: raw.readInt32BE(4),
    digits: raw.readInt32BE(12),
    lowest: Number(raw.readBigInt64BE(16)),
    highest: Number(raw.readBigInt64BE(24)),
  }
  if (header.payloadBytes < 0 || header.payloadBytes > raw.length - HEADER_BYTES)
    return { ok: false, error: `payload length ${header.payloadBytes} does not match the data` }
  if (header.digits < limits.digits || header.digits > (limits.maxDigits ?? limits.digits))
    return {
      ok: false,
      error:
        limits.maxDigits === undefined
          ? `histogram has ${header.digits} significant digits; tailguard takes exactly ${limits.digits}`
          : `histogram has ${header.digits} significant digits; tailguard reads ${limits.digits} to ${limits.maxDigits}`,
    }
  if (header.lowest !== limits.lowest)
    return {
      ok: false,
      error: `histogram's lowest discernible value is ${header.lowest}; tailguard takes ${limits.lowest} (µs)`,
    }
  if (!(header.highest >= 2 && header.highest <= limits.maxHighest))
    return {
      ok: false,
      error: `histogram's highest trackable value ${header.highest} is outside 2..${limits.maxHighest} (µs)`,
    }
  return { ok: true, header, decoded: raw }
}
