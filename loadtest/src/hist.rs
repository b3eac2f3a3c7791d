//! Latency histograms: HDR histograms in microseconds, their exact merge across loader
//! processes (V2 serialization, base64 over the worker's stdout), and the summary the
//! report prints.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

use crate::error::LoadtestError;

/// Largest value tracked: one hour in microseconds (larger values are clamped).
const MAX_US: u64 = 3_600_000_000;

/// A new histogram of microseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, MAX_US, 3) {
        Ok(h) => h,
        // Invariant: low 1, high ≥ 2 · low and 3 significant figures is a valid configuration.
        Err(e) => unreachable!("valid histogram bounds: {e:?}"),
    }
}

/// Record `us` (clamped into the tracked range).
pub fn record(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.clamp(1, MAX_US));
}

/// Serialize exactly (HDR V2, base64).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2Serializer::new().serialize(h, &mut bytes);
    STANDARD.encode(bytes)
}

/// Deserialize what [`encode`] wrote.
pub fn decode(text: &str) -> Result<Histogram<u64>, LoadtestError> {
    let bytes = STANDARD.decode(text).map_err(|e| LoadtestError::Worker(format!("bad histogram encoding: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| LoadtestError::Worker(format!("bad histogram: {e:?}")))
}

/// Merge `from` into `into` exactly.
pub fn merge(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    // Both have the same bounds (new_histogram), so adding cannot fail; clamp otherwise.
    if into.add(from).is_err() {
        for v in from.iter_recorded() {
            into.saturating_record_n(v.value_iterated_to().min(MAX_US), v.count_at_value());
        }
    }
}

/// A histogram's summary, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Summary {
    /// Summarize `h`.
    ///
    /// ```
    /// use mcp_fleet_loadtest::hist::{Summary, new_histogram, record};
    /// let mut h = new_histogram();
    /// for us in 1..=100 { record(&mut h, us); }
    /// let s = Summary::of(&h);
    /// assert_eq!((s.count, s.p50, s.max), (100, 50, 100));
    /// ```
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            count: h.len(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_serialized_halves_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (new_histogram(), new_histogram(), new_histogram());
        for v in 1..5000u64 {
            let us = v * 37 % 100_000 + 1;
            record(if v % 2 == 0 { &mut a } else { &mut b }, us);
            record(&mut all, us);
        }
        let mut merged = decode(&encode(&a)).unwrap();
        merge(&mut merged, &decode(&encode(&b)).unwrap());
        assert_eq!(merged, all);
        assert_eq!(Summary::of(&merged), Summary::of(&all));
    }
}
