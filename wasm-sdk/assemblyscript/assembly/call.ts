// State of the lifecycle call in progress, shared by the SDK's modules.

/** Call holds what the current host call may do and its first error. */
export class Call {
  /** The lifecycle method running ("Execute", "Next", ...), for messages. */
  static name: string = "";
  /** Whether the ABI allows emitting (and acking) in this call. */
  static canEmit: bool = false;
  /** The first error of the call: it fails the call when it returns. */
  static error: string | null = null;
  /** Acking: manual mode (Context.manualAck); the tuple being executed (0:
   * none); whether it was acked or failed during the call; what plain
   * emits anchor on (the tuple being executed in automatic mode, else 0). */
  static manualAck: bool = false;
  static cur: u64 = 0;
  /** The address of the Tuple execute is running (0 outside it), for
   * abort's message (an address: call.ts cannot import tuple.ts). */
  static tuplePtr: usize = 0;
  static curDone: bool = false;
  static autoAnchor: u64 = 0;
}

/** Records the call's first error (later ones are dropped). */
export function setCallError(message: string): void {
  if (Call.error === null) Call.error = message;
}

/**
 * Fails the current lifecycle call with `message` when it returns: the SDK
 * reports it to the host with `ardea.error` and returns an error code. In
 * `execute` the host fails the tuple being executed (and runs the rest of
 * the batch in a fresh instance); in other methods it fails the task
 * instance. Unlike `throw` (which traps at once), the method keeps running
 * until it returns. Emits and state changes of the call are dropped.
 */
export function failCall(message: string): void {
  setCallError(message);
}
