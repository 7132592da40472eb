// The host functions of ABI v1 (import module "ardea", wasm-sdk/ABI.md).
// Only the ones a module uses end up in its import section.

// @ts-ignore: decorator
@external("ardea", "emit")
export declare function hostEmit(ptr: usize, len: i32): void;

// @ts-ignore: decorator
@external("ardea", "log")
export declare function hostLog(level: i32, ptr: usize, len: i32): void;

// @ts-ignore: decorator
@external("ardea", "error")
export declare function hostError(ptr: usize, len: i32): void;

// @ts-ignore: decorator
@external("ardea", "state_get")
export declare function hostStateGet(kptr: usize, klen: i32, vptr: usize, vcap: i32): i32;

// @ts-ignore: decorator
@external("ardea", "state_write")
export declare function hostStateWrite(ptr: usize, len: i32): void;

// @ts-ignore: decorator
@external("ardea", "state_scan")
export declare function hostStateScan(pptr: usize, plen: i32, bptr: usize, bcap: i32): i32;

// @ts-ignore: decorator
@external("ardea", "metric")
export declare function hostMetric(nptr: usize, nlen: i32, delta: i64): void;

// @ts-ignore: decorator
@external("ardea", "gauge")
export declare function hostGauge(nptr: usize, nlen: i32, value: f64): void;

// @ts-ignore: decorator
@external("ardea", "observe")
export declare function hostObserve(nptr: usize, nlen: i32, value: i64): void;

// @ts-ignore: decorator
@external("ardea", "now")
export declare function hostNow(): i64;
