//! A software timer service: many virtual timers (one-shot and periodic) on
//! one kernel timer, in the study's two designs.
//!
//! - **hopping**: the kernel timer is one-shot and always armed to the
//!   earliest virtual deadline; each expiry runs the due timers and re-arms.
//!   One kernel expiry per event (or per group of equal deadlines).
//! - **polling**: a periodic tick checks the head of the list; a timer runs
//!   at the first tick at or after its deadline, so the error grows by up to
//!   one tick and the service wakes whether anything is due or not.
//!
//! The list is a binary heap of absolute deadlines ([`TimerQueue`]): insert
//! and expire are O(log n), cancel is O(1) (the entry is dropped lazily when
//! it reaches the head; the heap is compacted when dead entries outnumber
//! live ones). The study keeps a list of deltas for hopping; absolute
//! deadlines in a heap give the same next expiry without an O(n) insert, and
//! a periodic timer does not drift by the rounding of its deltas.
//!
//! [`TimerService`] runs the service thread; every expiry calls one handler
//! given at [`TimerService::spawn`] with a [`Fired`], which carries the
//! stage timestamps: requested (the `add` call began), armed (the kernel
//! timer was set, hopping), the kernel timer's target, woke (its wait
//! returned) and callback (just before the handler). Compensation is one
//! static offset, applied where the study applies it: the kernel timer is
//! armed that much before the deadline (hopping), or a timer is taken as due
//! that much before it (polling). Nothing is allocated per timer after
//! [`TimerQueue::with_capacity`]'s capacity; `add` and the expiry take the
//! service's lock (the study disables interrupts for the same purpose).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::sys;

/// A virtual timer: a slot and its generation (a cancelled or fired
/// one-shot timer's id never names a later timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    gen: u32,
    live: bool,
    period: u64,
    token: u64,
    requested: u64,
    armed: u64,
}

/// One expiry popped from the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The timer that expired.
    pub id: TimerId,
    /// Its deadline, ns.
    pub deadline: u64,
    /// The user's value given to `insert`.
    pub token: u64,
    /// When the `add` call began, and when it had armed the kernel timer.
    pub requested: u64,
    /// When the `add` call had armed the kernel timer, ns.
    pub armed: u64,
}

/// Virtual timers ordered by deadline (ties by insertion order).
#[derive(Debug, Clone, Default)]
pub struct TimerQueue {
    heap: BinaryHeap<Reverse<(u64, u64, u32, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    seq: u64,
    live: usize,
}

impl TimerQueue {
    /// A queue that holds `n` timers without allocating.
    pub fn with_capacity(n: usize) -> Self {
        TimerQueue {
            heap: BinaryHeap::with_capacity(2 * n + 1),
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            seq: 0,
            live: 0,
        }
    }

    /// Live timers.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Adds a timer due at `deadline` (then every `period` if non-zero).
    pub fn insert(&mut self, deadline: u64, period: u64, token: u64) -> TimerId {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        s.live = true;
        s.period = period;
        s.token = token;
        s.requested = 0;
        s.armed = 0;
        let gen = s.gen;
        self.live += 1;
        self.push(deadline, slot, gen);
        TimerId { slot, gen }
    }

    fn push(&mut self, deadline: u64, slot: u32, gen: u32) {
        self.seq += 1;
        self.heap.push(Reverse((deadline, self.seq, slot, gen)));
    }

    /// Records the stage times of a timer (set-up: requested → armed).
    pub fn stamp(&mut self, id: TimerId, requested: u64, armed: u64) {
        if let Some(s) = self.slots.get_mut(id.slot as usize) {
            if s.gen == id.gen && s.live {
                s.requested = requested;
                s.armed = armed;
            }
        }
    }

    /// Cancels a timer; `false` if it already fired (one-shot) or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> bool {
        match self.slots.get_mut(id.slot as usize) {
            Some(s) if s.gen == id.gen && s.live => {
                self.release(id.slot);
                if self.heap.len() > 2 * self.live + 16 {
                    self.compact();
                }
                true
            }
            _ => false,
        }
    }

    fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        s.live = false;
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
    }

    fn valid(&self, slot: u32, gen: u32) -> bool {
        let s = &self.slots[slot as usize];
        s.live && s.gen == gen
    }

    /// Drops dead entries (O(n)).
    fn compact(&mut self) {
        let slots = &self.slots;
        self.heap.retain(|Reverse((_, _, slot, gen))| {
            let s = &slots[*slot as usize];
            s.live && s.gen == *gen
        });
    }

    /// The earliest live deadline.
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(Reverse((d, _, slot, gen))) = self.heap.peek().copied() {
            if self.valid(slot, gen) {
                return Some(d);
            }
            self.heap.pop();
        }
        None
    }

    /// Pops the earliest timer if it is due at `now` (deadline ≤ now); a
    /// periodic timer goes back in at deadline + period (on its grid).
    pub fn pop_due(&mut self, now: u64) -> Option<Expired> {
        let d = self.next_deadline()?;
        if d > now {
            return None;
        }
        let Reverse((deadline, _, slot, gen)) = self.heap.pop()?;
        let s = self.slots[slot as usize];
        let e = Expired {
            id: TimerId { slot, gen },
            deadline,
            token: s.token,
            requested: s.requested,
            armed: s.armed,
        };
        if s.period > 0 {
            self.push(deadline + s.period, slot, gen);
        } else {
            self.release(slot);
        }
        Some(e)
    }
}

/// The two designs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// A one-shot kernel timer re-armed to the next deadline.
    Hopping,
    /// A periodic tick of this many ns checks the head of the list.
    /// A periodic tick of `tick_ns`.
    Polling {
        /// The tick, ns.
        tick_ns: u64,
    },
}

/// One virtual timer's expiry with its stage timestamps (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// The timer that fired.
    pub id: TimerId,
    /// The user's value given to `add`.
    pub token: u64,
    /// Its deadline, ns.
    pub deadline: u64,
    /// `add` began / had armed the kernel timer (hopping; polling: inserted).
    pub requested: u64,
    /// When the `add` call had armed the kernel timer, ns.
    pub armed: u64,
    /// What the kernel timer was set to (hopping: head − offset; polling: the tick).
    pub hw_target: u64,
    /// When the service thread's wait returned.
    pub woke: u64,
    /// Just before the handler ran.
    pub callback: u64,
}

struct Shared {
    queue: Mutex<TimerQueue>,
    timer: sys::OneShotTimerfd,
    design: Design,
    offset_ns: u64,
    stop: AtomicBool,
    /// What the kernel timer is armed to (hopping), so that `add` re-arms
    /// only when the head moves earlier.
    armed_to: Mutex<u64>,
}

/// The service: a handle to add and cancel timers; the thread runs the handler.
pub struct TimerService {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<io::Result<u64>>>,
}

fn now() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

impl TimerService {
    /// Starts the service thread. `setup` runs first on that thread (set its
    /// policy and affinity there); `handler` runs for every expiry, on that
    /// thread, with the service's lock released. `offset_ns` is the static
    /// compensation; `capacity` timers fit without allocating.
    pub fn spawn<F, S>(
        design: Design,
        offset_ns: u64,
        capacity: usize,
        setup: S,
        mut handler: F,
    ) -> io::Result<Self>
    where
        F: FnMut(&Fired) + Send + 'static,
        S: FnOnce() + Send + 'static,
    {
        let shared = Arc::new(Shared {
            queue: Mutex::new(TimerQueue::with_capacity(capacity)),
            timer: sys::OneShotTimerfd::new(libc::CLOCK_MONOTONIC)?,
            design,
            offset_ns,
            stop: AtomicBool::new(false),
            armed_to: Mutex::new(u64::MAX),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("rtscope-timer-service".into())
            .spawn(move || -> io::Result<u64> {
                setup();
                let mut hw = 0u64;
                let tick = match sh.design {
                    Design::Polling { tick_ns } => tick_ns,
                    Design::Hopping => 0,
                };
                let mut next_tick = now() + tick;
                if tick > 0 {
                    sh.timer.arm(next_tick)?;
                    // A shutdown before this arm was overwritten by it: without
                    // this check it would wait for the first tick.
                    if sh.stop.load(Ordering::Acquire) {
                        return Ok(0);
                    }
                }
                let mut due: Vec<Fired> = Vec::with_capacity(capacity.max(1));
                loop {
                    sh.timer.wait()?;
                    let woke = now();
                    if sh.stop.load(Ordering::Acquire) {
                        return Ok(hw);
                    }
                    hw += 1;
                    let target;
                    {
                        let mut q = sh.queue.lock().unwrap_or_else(|p| p.into_inner());
                        if tick > 0 {
                            target = next_tick;
                            // On the tick grid; skipped ticks are not run.
                            while next_tick <= woke {
                                next_tick += tick;
                            }
                            sh.timer.arm(next_tick)?;
                        } else {
                            target = *sh.armed_to.lock().unwrap_or_else(|p| p.into_inner());
                        }
                        let horizon = woke + sh.offset_ns;
                        while let Some(e) = q.pop_due(horizon) {
                            if due.len() == due.capacity() {
                                break;
                            }
                            due.push(Fired {
                                id: e.id,
                                token: e.token,
                                deadline: e.deadline,
                                requested: e.requested,
                                armed: e.armed,
                                hw_target: target,
                                woke,
                                callback: 0,
                            });
                        }
                        if tick == 0 {
                            let mut a = sh.armed_to.lock().unwrap_or_else(|p| p.into_inner());
                            match q.next_deadline() {
                                Some(d) => {
                                    let t = d.saturating_sub(sh.offset_ns);
                                    sh.timer.arm(t)?;
                                    *a = t;
                                }
                                None => *a = u64::MAX,
                            }
                        }
                    }
                    for f in due.iter_mut() {
                        f.callback = now();
                        handler(f);
                    }
                    due.clear();
                }
            })?;
        Ok(TimerService {
            shared,
            thread: Some(thread),
        })
    }

    /// Adds a timer due at `deadline` (absolute, CLOCK_MONOTONIC), then
    /// every `period` if non-zero. Hopping re-arms the kernel timer when the
    /// new timer is the earliest. The set-up stage (this call) is recorded.
    pub fn add(&self, deadline: u64, period: u64, token: u64) -> io::Result<TimerId> {
        let requested = now();
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        let id = q.insert(deadline, period, token);
        if self.shared.design == Design::Hopping {
            let mut a = self
                .shared
                .armed_to
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let t = deadline.saturating_sub(self.shared.offset_ns);
            if t < *a {
                self.shared.timer.arm(t)?;
                *a = t;
            }
        }
        q.stamp(id, requested, now());
        Ok(id)
    }

    /// Cancels a timer; `false` if it already fired or was cancelled.
    pub fn cancel(&self, id: TimerId) -> bool {
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.cancel(id)
    }

    /// Stops the service thread; returns its kernel-timer expiries.
    pub fn shutdown(mut self) -> io::Result<u64> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> io::Result<u64> {
        self.shared.stop.store(true, Ordering::Release);
        let _ = self.shared.timer.arm(1);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the timer service thread panicked"))),
            None => Ok(0),
        }
    }
}

impl Drop for TimerService {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pops_in_deadline_order_and_cancel_removes() {
        let mut q = TimerQueue::with_capacity(8);
        let a = q.insert(300, 0, 1);
        let _b = q.insert(100, 0, 2);
        let c = q.insert(200, 0, 3);
        assert!(q.cancel(c));
        assert!(!q.cancel(c), "a second cancel is refused");
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_due(50), None);
        assert_eq!(q.pop_due(1000).unwrap().token, 2);
        assert_eq!(q.pop_due(1000).unwrap().id, a);
        assert!(q.pop_due(1000).is_none());
        assert!(!q.cancel(a), "a fired one-shot cannot be cancelled");
    }

    #[test]
    fn capacity_empty_and_stamps() {
        let mut q = TimerQueue::with_capacity(8);
        assert!(q.heap.capacity() >= 17 && q.slots.capacity() >= 8 && q.free.capacity() >= 8);
        assert!(q.is_empty());
        let a = q.insert(100, 0, 7);
        assert!(!q.is_empty());
        q.stamp(a, 11, 22);
        let b = q.insert(200, 0, 8);
        q.stamp(b, 33, 44);
        // A stale id stamps nothing: b's slot reused after its cancel.
        assert!(q.cancel(b));
        q.stamp(b, 99, 99);
        let c = q.insert(300, 0, 9);
        assert_eq!(c.slot, b.slot);
        q.stamp(b, 55, 66);
        let e = q.pop_due(100).unwrap();
        assert_eq!((e.token, e.requested, e.armed), (7, 11, 22));
        // A fired one-shot's id stamps nothing either.
        q.stamp(a, 1, 2);
        let e = q.pop_due(300).unwrap();
        assert_eq!((e.token, e.requested, e.armed), (9, 0, 0));
        assert!(q.is_empty());
    }

    #[test]
    fn cancelled_entries_are_compacted_past_twice_the_live_plus_16() {
        let mut q = TimerQueue::with_capacity(64);
        let ids: Vec<_> = (0..30).map(|i| q.insert(1_000 + i, 0, i)).collect();
        // Cancelled entries stay in the heap while it holds at most
        // 2 × live + 16 of them.
        for (k, id) in ids.iter().take(23).enumerate() {
            assert!(q.cancel(*id));
            assert_eq!(q.len(), 29 - k);
            assert_eq!(q.heap.len(), 30, "live {}", q.len());
        }
        // live 6: 30 > 28, compacted to the live ones.
        assert!(q.cancel(ids[23]));
        assert_eq!((q.len(), q.heap.len()), (6, 6));
        // A slot reused by a live timer: its old entry (older generation) is
        // dropped too.
        assert!(q.cancel(ids[24]));
        let reused = q.insert(4_000, 0, 200);
        assert_eq!(reused.slot, ids[24].slot);
        let mut compacted = false;
        for i in 0..40 {
            let before = q.heap.len();
            let id = q.insert(5_000 + i, 0, 100 + i);
            assert!(q.cancel(id));
            if q.heap.len() < before {
                assert_eq!((q.len(), q.heap.len()), (6, 6));
                compacted = true;
                break;
            }
        }
        assert!(compacted);
        let mut due = Vec::new();
        while let Some(e) = q.pop_due(u64::MAX) {
            due.push(e.token);
        }
        assert_eq!(due, vec![25, 26, 27, 28, 29, 200]);
    }

    #[test]
    fn polling_first_tick_is_one_tick_ahead() {
        // A 10 s tick: stopped after 20 ms, the service has not ticked yet
        // (a first tick armed in the past would have fired at once).
        let svc = TimerService::spawn(
            Design::Polling {
                tick_ns: 10_000_000_000,
            },
            0,
            4,
            || {},
            |_: &Fired| {},
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(svc.shutdown().unwrap(), 0);
        // Shut down at once (maybe before the thread armed its first tick):
        // it still ends without waiting for the tick.
        let svc = TimerService::spawn(
            Design::Polling {
                tick_ns: 3_600_000_000_000,
            },
            0,
            4,
            || {},
            |_: &Fired| {},
        )
        .unwrap();
        assert_eq!(svc.shutdown().unwrap(), 0);
    }

    #[test]
    fn hopping_is_idle_without_timers() {
        let svc = TimerService::spawn(Design::Hopping, 0, 4, || {}, |_: &Fired| {}).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(svc.shutdown().unwrap(), 0);
    }

    #[test]
    fn polling_wakes_at_most_once_per_tick() {
        // Skipped ticks are not run, so a delayed thread can only wake less.
        let tick = 10_000_000;
        let t0 = now();
        let svc = TimerService::spawn(
            Design::Polling { tick_ns: tick },
            0,
            4,
            || {},
            |_: &Fired| {},
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let hw = svc.shutdown().unwrap();
        let most = (now() - t0) / tick + 1;
        assert!(hw <= most, "{hw} kernel-timer expiries in {most} ticks");
    }

    #[test]
    fn hopping_with_an_offset_fires_each_timer_on_its_first_wake() {
        // The kernel timer is armed `offset` before the deadline, and the
        // wake pops what is due by then: one expiry per timer, each early.
        use std::sync::mpsc;
        let offset = 20_000_000;
        let (tx, rx) = mpsc::channel();
        let svc = TimerService::spawn(
            Design::Hopping,
            offset,
            8,
            || {},
            move |f: &Fired| {
                let _ = tx.send(*f);
            },
        )
        .unwrap();
        let t0 = now();
        for i in 0..3u64 {
            svc.add(t0 + 50_000_000 + i * 30_000_000, 0, i).unwrap();
        }
        for i in 0..3u64 {
            let f = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
            assert_eq!(f.token, i);
            assert_eq!(f.hw_target, f.deadline - offset);
            assert!(f.woke >= f.hw_target);
        }
        let hw = svc.shutdown().unwrap();
        assert!((1..=3).contains(&hw), "{hw}");
    }

    #[test]
    fn dropping_the_service_stops_it() {
        use std::sync::atomic::AtomicUsize;
        let fired = Arc::new(AtomicUsize::new(0));
        let f2 = fired.clone();
        let svc = TimerService::spawn(
            Design::Hopping,
            0,
            4,
            || {},
            move |_: &Fired| {
                f2.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        svc.add(now() + 200_000_000, 0, 1).unwrap();
        drop(svc);
        std::thread::sleep(std::time::Duration::from_millis(400));
        assert_eq!(fired.load(Ordering::SeqCst), 0, "a dropped service fired");
    }

    #[test]
    fn a_stale_id_never_names_a_reused_slot() {
        let mut q = TimerQueue::with_capacity(1);
        let a = q.insert(100, 0, 1);
        assert!(q.cancel(a));
        let b = q.insert(200, 0, 2);
        assert_ne!(a, b);
        assert!(!q.cancel(a));
        assert_eq!(q.pop_due(1000).unwrap().token, 2);
    }

    #[test]
    fn periodic_timers_stay_on_their_grid() {
        let mut q = TimerQueue::with_capacity(2);
        let p = q.insert(1000, 250, 7);
        let ds: Vec<u64> = (0..4)
            .map(|_| q.pop_due(u64::MAX).unwrap().deadline)
            .collect();
        assert_eq!(ds, [1000, 1250, 1500, 1750]);
        assert!(q.cancel(p));
        assert!(q.pop_due(u64::MAX).is_none());
    }

    #[test]
    fn ties_fire_in_insertion_order() {
        let mut q = TimerQueue::with_capacity(4);
        for t in 0..4 {
            q.insert(500, 0, t);
        }
        let order: Vec<u64> = (0..4).map(|_| q.pop_due(500).unwrap().token).collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }

    proptest! {
        /// Against a model: after any inserts and cancels, the queue yields
        /// exactly the live timers, by deadline, and its heap stays bounded.
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec((0u64..1000, any::<bool>()), 1..200)) {
            let mut q = TimerQueue::with_capacity(4);
            let mut model: Vec<(u64, u64, TimerId)> = Vec::new();
            for (i, (d, cancel_one)) in ops.iter().enumerate() {
                let id = q.insert(*d, 0, i as u64);
                model.push((*d, i as u64, id));
                if *cancel_one && model.len() > 1 {
                    let k = (d % model.len() as u64) as usize;
                    let (_, _, cid) = model.remove(k);
                    prop_assert!(q.cancel(cid));
                }
                prop_assert!(q.heap.len() <= 2 * q.len() + 17);
            }
            prop_assert_eq!(q.len(), model.len());
            model.sort_by_key(|m| (m.0, m.1));
            for (d, tok, _) in model {
                let e = q.pop_due(u64::MAX).unwrap();
                prop_assert_eq!((e.deadline, e.token), (d, tok));
            }
            prop_assert!(q.pop_due(u64::MAX).is_none());
        }
    }

    #[test]
    fn the_service_fires_every_timer_once_in_order() {
        use std::sync::mpsc;
        for design in [Design::Hopping, Design::Polling { tick_ns: 200_000 }] {
            let (tx, rx) = mpsc::channel();
            let svc = TimerService::spawn(
                design,
                0,
                16,
                || {},
                move |f: &Fired| {
                    let _ = tx.send(*f);
                },
            )
            .unwrap();
            // 100 ms ahead: every add is done before the first expiry, also
            // under qemu user emulation (where the first adds are slow).
            let t0 = now();
            let ids: Vec<TimerId> = (0..5u64)
                .map(|i| svc.add(t0 + 100_000_000 - i * 300_000, 0, i).unwrap())
                .collect();
            assert!(svc.cancel(ids[2]));
            let got: Vec<Fired> = (0..4)
                .map(|_| rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap())
                .collect();
            let toks: Vec<u64> = got.iter().map(|f| f.token).collect();
            assert_eq!(toks, [4, 3, 1, 0], "{design:?}");
            for f in &got {
                assert!(f.requested <= f.armed && f.woke <= f.callback);
                assert!(f.callback >= f.deadline, "fired before its deadline");
            }
            let hw = svc.shutdown().unwrap();
            assert!(hw >= 1);
            assert!(rx.try_recv().is_err(), "the cancelled timer fired");
        }
    }
}
