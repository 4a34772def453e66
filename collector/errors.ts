/**
 * tailguard's coded errors (STYLE.md section 4). Each has a stable `code` and an HTTP status; the
 * collector's error handler answers `{ code, message, statusCode }`. The README's error table lists every
 * code, and a test checks that it does.
 *
 * @example
 * ```ts
 * throw new BadRequest('from: expected an ISO time or a relative time like -1h, got "yesterday"')
 * ```
 */
export abstract class TailguardError extends Error {
  abstract readonly code: string
  abstract readonly statusCode: number
  override get name(): string {
    return this.code
  }
}

export class BadRequest extends TailguardError {
  readonly code = 'TG_ERR_BAD_REQUEST'
  readonly statusCode = 400
}
export class Unauthorized extends TailguardError {
  readonly code = 'TG_ERR_UNAUTHORIZED'
  readonly statusCode = 401
}
export class Forbidden extends TailguardError {
  readonly code = 'TG_ERR_FORBIDDEN'
  readonly statusCode = 403
}
export class NotFound extends TailguardError {
  readonly code = 'TG_ERR_NOT_FOUND'
  readonly statusCode = 404
}
export class PayloadTooLarge extends TailguardError {
  readonly code = 'TG_ERR_PAYLOAD_TOO_LARGE'
  readonly statusCode = 413
}
export class UnsupportedMediaType extends TailguardError {
  readonly code = 'TG_ERR_UNSUPPORTED_MEDIA_TYPE'
  readonly statusCode = 415
}
export class StoreUnavailable extends TailguardError {
  readonly code = 'TG_ERR_STORE_UNAVAILABLE'
  readonly statusCode = 503
}
/** A config file or flag is invalid; the message names the file, line and field of every problem. */
export class ConfigInvalid extends TailguardError {
  readonly code = 'TG_ERR_CONFIG_INVALID'
  readonly statusCode = 400
}
/** No SLO has this name. */
export class SloNotFound extends TailguardError {
  readonly code = 'TG_ERR_SLO_NOT_FOUND'
  readonly statusCode = 404
}
/** An SLO definition sent to the API is invalid; the message names every field at fault. */
export class SloInvalid extends TailguardError {
  readonly code = 'TG_ERR_SLO_INVALID'
  readonly statusCode = 400
}
/** The SLO exists already, or is defined in a file and cannot be changed through the API. */
export class SloConflict extends TailguardError {
  readonly code = 'TG_ERR_SLO_CONFLICT'
  readonly statusCode = 409
}
/** No silence has this id. */
export class SilenceNotFound extends TailguardError {
  readonly code = 'TG_ERR_SILENCE_NOT_FOUND'
  readonly statusCode = 404
}

/** Every error class, for the README check. */
export const ERROR_CLASSES = [
  BadRequest,
  Unauthorized,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  UnsupportedMediaType,
  StoreUnavailable,
  ConfigInvalid,
  SloNotFound,
  SloInvalid,
  SloConflict,
  SilenceNotFound,
] as const
