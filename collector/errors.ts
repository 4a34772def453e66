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
/**
 * A report passed validation but the database refused its data (a data or integrity error, or a bug) while
 * the database itself answers: retrying the same report would fail again, so agents dead-letter it.
 */
export class ReportUnprocessable extends TailguardError {
  readonly code = 'TG_ERR_REPORT_UNPROCESSABLE'
  readonly statusCode = 422
}
/** The request's headers or body did not arrive within the listener's timeouts (slow client). */
export class RequestTimeout extends TailguardError {
  readonly code = 'TG_ERR_REQUEST_TIMEOUT'
  readonly statusCode = 408
}
/** The request line and headers are larger than the HTTP parser accepts. */
export class HeadersTooLarge extends TailguardError {
  readonly code = 'TG_ERR_HEADERS_TOO_LARGE'
  readonly statusCode = 431
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
/** A query names a service (or other label value) that no series has ever reported; the message offers the closest names. */
export class SeriesNotFound extends TailguardError {
  readonly code = 'TG_ERR_SERIES_NOT_FOUND'
  readonly statusCode = 404
}
/** No silence has this id. */
export class SilenceNotFound extends TailguardError {
  readonly code = 'TG_ERR_SILENCE_NOT_FOUND'
  readonly statusCode = 404
}
/** No controller target has this name (targets come from the `controllers:` section of the config). */
export class ControllerNotFound extends TailguardError {
  readonly code = 'TG_ERR_CONTROLLER_NOT_FOUND'
  readonly statusCode = 404
}

/** A setpoints PUT carried a fencing token lower than the highest the agent accepted (a deposed controller). */
export class SetpointsFenced extends TailguardError {
  readonly code = 'TG_ERR_SETPOINTS_FENCED'
  readonly statusCode = 409
}
/** The proxy's admission control shed the request (429, or 503 when configured); the body names the reason. */
export class RequestShed extends TailguardError {
  readonly code = 'TG_ERR_SHED'
  readonly statusCode = 429
}
/** The proxy could not reach the upstream, or it answered garbage or closed the connection. */
export class UpstreamUnavailable extends TailguardError {
  readonly code = 'TG_ERR_UPSTREAM_UNAVAILABLE'
  readonly statusCode = 502
}
/** The upstream did not answer (connect or response headers) in time. */
export class UpstreamTimeout extends TailguardError {
  readonly code = 'TG_ERR_UPSTREAM_TIMEOUT'
  readonly statusCode = 504
}
/** Every upstream of the proxy is removed or draining. */
export class NoUpstream extends TailguardError {
  readonly code = 'TG_ERR_NO_UPSTREAM'
  readonly statusCode = 503
}

/** Every error class, for the README check. */
/** Another what-if simulation is running on this collector (`POST /api/v1/whatif` runs one at a time). */
export class WhatifBusy extends TailguardError {
  readonly code = 'TG_ERR_WHATIF_BUSY'
  readonly statusCode = 429
}
/** A what-if simulation ran past its time limit and was stopped. */
export class WhatifTimeout extends TailguardError {
  readonly code = 'TG_ERR_WHATIF_TIMEOUT'
  readonly statusCode = 503
}

export const ERROR_CLASSES = [
  BadRequest,
  Unauthorized,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  UnsupportedMediaType,
  StoreUnavailable,
  ReportUnprocessable,
  RequestTimeout,
  HeadersTooLarge,
  ConfigInvalid,
  SloNotFound,
  SloInvalid,
  SloConflict,
  SilenceNotFound,
  SetpointsFenced,
  RequestShed,
  UpstreamUnavailable,
  UpstreamTimeout,
  NoUpstream,
  SeriesNotFound,
  ControllerNotFound,
  WhatifBusy,
  WhatifTimeout,
] as const
