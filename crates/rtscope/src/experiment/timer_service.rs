//! `rtscope timer --service`: placeholder.
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use rtscope_core::result::Series;
use rtscope_core::rt::ThreadState;
use rtscope_core::timer::calibrate::Calibration;

use super::timer::TimerPlan;

pub fn run_service(
    _plan: &TimerPlan,
    _cal: &mut Calibration,
    _stop: &AtomicBool,
    _origin: u64,
) -> Result<(ThreadState, Vec<Series>)> {
    Err(anyhow::anyhow!("not yet"))
}
