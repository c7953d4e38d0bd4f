//! Random loss and delay jitter for one direction: pure and seeded, so runs
//! can be repeated and the logic is unit-tested without root.
//!
//! Loss: each packet is lost independently with probability `loss` (a
//! Bernoulli process, netem's plain `loss P`), decided on arrival, before
//! the bottleneck queue. The forwarder reads one IP packet per segment when
//! loss is on (no GSO super-packets, see `args`), so the rate is per
//! segment, as on a real path.
//!
//! Jitter: each packet's propagation delay varies uniformly within
//! `delay ± half` (clamped at zero), but a packet is never delivered before
//! the one ahead of it in the same direction. Jitter on real paths comes
//! from queues, which keep order; netem's jitter reorders packets spaced
//! closer than the jitter, which TCP reads as loss. Keeping order means a
//! packet that drew a short delay right behind one that drew a long delay
//! waits for it: with arrivals spaced more than `2 * half` apart the delays
//! are exactly uniform, closer ones bunch up behind their predecessor.

/// splitmix64: a small, fast, seedable generator with good statistical
/// quality for simulation (not for secrets).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max` (multiply-shift; the bias is below 2^-64 * max).
    pub(crate) fn up_to(&mut self, max: u64) -> u64 {
        let span = max as u128 + 1;
        ((self.next_u64() as u128 * span) >> 64) as u64
    }
}

/// Parts per billion: the unit of `--loss` (0.1% = 1_000_000).
pub(crate) const PPB: u64 = 1_000_000_000;

/// One direction's loss and jitter.
#[derive(Debug, Clone)]
pub(crate) struct Impair {
    loss_ppb: u64,
    half_jitter_ns: u64,
    rng: Rng,
    /// Delivery time of the previous packet admitted (order is kept).
    last_due: u64,
}

impl Impair {
    /// `loss_ppb` in parts per billion (below [`PPB`]); `half_jitter_ns` the
    /// most the one-way delay moves either way; `seed` this direction's.
    pub(crate) fn new(loss_ppb: u64, half_jitter_ns: u64, seed: u64) -> Impair {
        Impair {
            loss_ppb: loss_ppb.min(PPB),
            half_jitter_ns,
            rng: Rng::new(seed),
            last_due: 0,
        }
    }

    /// Whether the packet arriving now is lost. Draws from the generator
    /// only when loss is on, so jitter alone repeats the same delays.
    pub(crate) fn lose(&mut self) -> bool {
        self.loss_ppb > 0 && self.rng.up_to(PPB - 1) < self.loss_ppb
    }

    /// The delivery time of a packet the pacer scheduled at `due` (after a
    /// propagation delay of `delay_ns`): moved by the jitter, never before
    /// it left the bottleneck (`due - delay_ns`) nor before the previous
    /// packet's delivery.
    pub(crate) fn deliver_at(&mut self, due: u64, delay_ns: u64) -> u64 {
        let mut at = due;
        if self.half_jitter_ns > 0 {
            let h = self.half_jitter_ns;
            let offset = self.rng.up_to(2 * h);
            // due - h + offset, with the floor at the end of serialization.
            let floor = due.saturating_sub(delay_ns);
            at = (due + offset).saturating_sub(h).max(floor);
        }
        at = at.max(self.last_due);
        self.last_due = at;
        at
    }
}

/// Two directions' seeds from one: independent streams, so loss on A->B
/// does not mirror loss on B->A.
pub(crate) fn direction_seeds(seed: u64) -> [u64; 2] {
    let mut r = Rng::new(seed);
    [r.next_u64(), r.next_u64()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn loss_rate_matches_and_repeats_with_the_seed() {
        // 0.1% over a million packets: 1000 expected, sd ~31.6.
        let count = |seed| {
            let mut i = Impair::new(1_000_000, 0, seed);
            (0..1_000_000).filter(|_| i.lose()).count()
        };
        let n = count(42);
        assert!((880..=1120).contains(&n), "{n}");
        assert_eq!(n, count(42), "same seed, same losses");
        assert_ne!(n, count(43), "another seed, other losses");
        // 0 and 100%.
        let mut none = Impair::new(0, 0, 1);
        assert!((0..10_000).all(|_| !none.lose()));
        let mut all = Impair::new(PPB, 0, 1);
        assert!((0..10_000).all(|_| all.lose()));
    }

    #[test]
    fn losses_are_independent() {
        // 10%: the chance that a packet after a loss is lost is still ~10%
        // (no bursts), and runs of losses follow the geometric law.
        let mut i = Impair::new(PPB / 10, 0, 7);
        let lost: Vec<bool> = (0..200_000).map(|_| i.lose()).collect();
        let after_loss = lost.windows(2).filter(|w| w[0]).count();
        let both = lost.windows(2).filter(|w| w[0] && w[1]).count();
        let p = both as f64 / after_loss as f64;
        assert!((0.09..0.11).contains(&p), "{p}");
    }

    #[test]
    fn jitter_is_uniform_within_bounds_when_spaced() {
        // ±5 ms around 50 ms, packets 20 ms apart: no ordering clamp.
        let mut i = Impair::new(0, 5 * MS, 3);
        let delays: Vec<u64> = (0..20_000u64)
            .map(|k| {
                let due = k * 20 * MS + 50 * MS;
                i.deliver_at(due, 50 * MS) - k * 20 * MS
            })
            .collect();
        assert!(delays.iter().all(|d| (45 * MS..=55 * MS).contains(d)));
        let mean = delays.iter().sum::<u64>() as f64 / delays.len() as f64;
        let var = delays
            .iter()
            .map(|&d| (d as f64 - mean).powi(2))
            .sum::<f64>()
            / delays.len() as f64;
        // Uniform on ±5 ms: mean 50, standard deviation 5/sqrt(3) = 2.887 ms.
        assert!((mean / MS as f64 - 50.0).abs() < 0.1, "{mean}");
        assert!(
            (var.sqrt() / MS as f64 - 2.887).abs() < 0.05,
            "{}",
            var.sqrt()
        );
        // Both ends are reached.
        assert!(delays.iter().any(|&d| d < 45 * MS + MS / 10));
        assert!(delays.iter().any(|&d| d > 55 * MS - MS / 10));
    }

    #[test]
    fn jitter_never_reorders() {
        // Back-to-back packets 12 us apart with ±5 ms jitter.
        let mut i = Impair::new(0, 5 * MS, 9);
        let mut last = 0;
        let mut clamped = 0;
        for k in 0..100_000u64 {
            let due = k * 12_000 + 10 * MS;
            let at = i.deliver_at(due, 10 * MS);
            assert!(at >= last, "packet {k} overtakes");
            // Never before it left the bottleneck.
            assert!(at >= due - 10 * MS);
            clamped += usize::from(at == last);
            last = at;
        }
        // Most packets queue behind an earlier, longer-delayed one.
        assert!(clamped > 50_000, "{clamped}");
    }

    #[test]
    fn jitter_larger_than_the_delay_is_clamped_at_zero() {
        let mut i = Impair::new(0, 5 * MS, 11);
        for k in 0..1000u64 {
            let sent = k * 100 * MS;
            let at = i.deliver_at(sent + MS, MS);
            assert!(at >= sent && at <= sent + 6 * MS, "{}", at - sent);
        }
    }

    #[test]
    fn seeds_differ_per_direction_and_repeat() {
        let [a, b] = direction_seeds(5);
        assert_ne!(a, b);
        assert_eq!(direction_seeds(5), [a, b]);
        let mut r = Rng::new(1);
        assert!((0..10_000).all(|_| r.up_to(9) <= 9));
        assert_eq!(Rng::new(0).up_to(0), 0);
    }
}
