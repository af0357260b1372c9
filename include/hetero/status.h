/* heterod — status codes shared by the public C ABI and the core.
 *
 * One table, libuv style: each entry is (NAME, value, message). The C ABI
 * exposes HETERO_<NAME> constants, hetero_status_name() and
 * hetero_status_message(); the core throws hetero::Failure carrying the same codes.
 * Values are part of the ABI: append, never renumber.
 */
#ifndef HETERO_STATUS_H
#define HETERO_STATUS_H

#define HETERO_STATUS_MAP(XX)                                                   \
  XX(OK, 0, "success")                                                          \
  XX(INVALID_ARGUMENT, 1, "invalid argument")                                   \
  XX(INVALID_MODEL, 2, "invalid model")                                         \
  XX(NOT_FOUND, 3, "not found")                                                 \
  XX(NOT_SUPPORTED, 4, "not supported")                                         \
  XX(OUT_OF_MEMORY, 5, "out of memory")                                         \
  XX(IO_ERROR, 6, "input/output error")                                         \
  XX(DRIVER_ERROR, 7, "driver error")                                           \
  XX(BLOB_MISMATCH, 8, "compiled blob does not match this host or request")     \
  XX(BLOB_CORRUPT, 9, "compiled blob is corrupt")                               \
  XX(BUSY, 10, "busy")                                                          \
  XX(TIMEOUT, 11, "timed out")                                                  \
  XX(PROTOCOL_ERROR, 12, "protocol error")                                      \
  XX(CONNECTION_ERROR, 13, "connection error")                                  \
  XX(PERMISSION_DENIED, 14, "permission denied")                                \
  XX(INTERNAL, 15, "internal error")                                            \
  XX(CANCELLED, 16, "cancelled")

typedef enum hetero_status {
#define HETERO_STATUS_ENUM_(name, value, message) HETERO_##name = value,
  HETERO_STATUS_MAP(HETERO_STATUS_ENUM_)
#undef HETERO_STATUS_ENUM_
} hetero_status;

#endif /* HETERO_STATUS_H */
