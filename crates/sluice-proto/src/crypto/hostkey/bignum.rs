//! The two big-number operations RSA key loading needs and aws-lc-rs does not
//! expose: `x - 1` and `a mod m`, to compute the CRT exponents
//! dP = d mod (p-1) and dQ = d mod (q-1) (RFC 8017 section 3.2) that OpenSSH
//! key files (PROTOCOL.key) do not store.
//!
//! Numbers are unsigned big-endian byte strings. `rem` is bit-serial
//! shift-and-subtract with a branch-free conditional subtraction, so its
//! running time depends only on the lengths of its inputs, not on the secret
//! values. Intermediates are zeroized.

use zeroize::Zeroizing;

/// Little-endian 32-bit limbs of a big-endian byte string, plus `extra` zero limbs.
fn to_limbs(be: &[u8], extra: usize) -> Zeroizing<Vec<u32>> {
    let mut limbs = Zeroizing::new(Vec::with_capacity(be.len() / 4 + 1 + extra));
    for chunk in be.rchunks(4) {
        let mut word = 0u32;
        for &b in chunk {
            word = (word << 8) | u32::from(b);
        }
        limbs.push(word);
    }
    let len = limbs.len().saturating_add(extra);
    limbs.resize(len, 0);
    limbs
}

/// `x - 1` as a big-endian string of the same length, or None if `x` is zero.
pub(super) fn sub_one(x: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let mut out = Zeroizing::new(x.to_vec());
    for b in out.iter_mut().rev() {
        let (v, borrow) = b.overflowing_sub(1);
        *b = v;
        if !borrow {
            return Some(out);
        }
    }
    None
}

/// `a mod m` as a big-endian string of `m.len()` bytes (leading zeros kept),
/// or None if `m` is zero.
pub(super) fn rem(a: &[u8], m: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    if m.iter().all(|&b| b == 0) {
        return None;
    }
    // One spare limb: before each reduction r < 2m.
    let m_limbs = to_limbs(m, 1);
    let mut r = Zeroizing::new(vec![0u32; m_limbs.len()]);
    let mut t = Zeroizing::new(vec![0u32; m_limbs.len()]);
    for &byte in a {
        for bit in (0..8).rev() {
            // r = 2r + bit
            let mut carry = u32::from(byte >> bit) & 1;
            for limb in r.iter_mut() {
                let next = *limb >> 31;
                *limb = (*limb << 1) | carry;
                carry = next;
            }
            // t = r - m; keep t when there was no borrow (r >= m).
            let mut borrow = 0u32;
            for ((d, &x), &y) in t.iter_mut().zip(r.iter()).zip(m_limbs.iter()) {
                let (v1, b1) = x.overflowing_sub(y);
                let (v2, b2) = v1.overflowing_sub(borrow);
                *d = v2;
                borrow = u32::from(b1 | b2);
            }
            let keep_t = borrow.wrapping_sub(1); // all ones when no borrow
            for (x, &d) in r.iter_mut().zip(t.iter()) {
                *x = (d & keep_t) | (*x & !keep_t);
            }
        }
    }
    let mut out = Zeroizing::new(vec![0u8; m.len()]);
    let bytes = r.iter().flat_map(|w| w.to_le_bytes());
    for (o, b) in out.iter_mut().rev().zip(bytes) {
        *o = b;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn small_values() {
        assert_eq!(*rem(&[100], &[7]).unwrap(), [2]);
        assert_eq!(*rem(&[0, 0, 1, 0], &[0, 0xff]).unwrap(), [0, 1]);
        assert_eq!(*rem(&[], &[5]).unwrap(), [0]);
        assert_eq!(*rem(&[1, 2, 3], &[1, 2, 3]).unwrap(), [0, 0, 0]);
        assert_eq!(*rem(&[4], &[1, 0, 0, 0, 0, 0]).unwrap(), [0, 0, 0, 0, 0, 4]);
        assert!(rem(&[4], &[0, 0]).is_none());
        assert_eq!(*sub_one(&[1, 0, 0]).unwrap(), [0, 0xff, 0xff]);
        assert_eq!(*sub_one(&[0x80]).unwrap(), [0x7f]);
        assert!(sub_one(&[0, 0]).is_none());
    }

    #[test]
    fn matches_python() {
        // (a, m, a % m) from Python for several sizes, including a shorter a
        // than m and m = 2^64 - 1.
        for (a, m, want) in VECTORS {
            assert_eq!(*rem(&hex(a), &hex(m)).unwrap(), hex(want), "{m}");
        }
    }

    const VECTORS: &[(&str, &str, &str)] = &[
        ("a139263059f28c105d1fb17c2390c192cfd3ac94af0f21ddb66cad4a268d116ece1738f7d93d9c172411e20b8f6b0d549b6f03675a1600a35a099950d836f675cc81e74ef5e8e25d940ed904759531985d5d9dc9f81818e811892f902bd23f0824128b2f330c5c7fd0a6a3a4506513270e269e0d37f2a74de452e6b438", "146b4cb2424a23d5962217beaddbc496cb8e81973e0becd7b03898d190f9ebdacc0cb1e29c658cda1495e60af593bd04cf0fd630f1f29d0da9953f48f1a09f76b5", "03bd5090151b1e950a065ba255c7fec94dc7419ef67566409df8acdc302f4875cfcc441a88aac3ee0e30adcf11bb38db6000d4aa3777d99cd5d746c8c09747c3be"),
        ("94a0f9e77f1b103cdf1582b0eab477d26415479c65dc9f503f63af83bd0561e6211c70cf49952399c4aaeac137dc76fb0f17a3007e62aa0a1df9fd789c6539382b0537e65affb2297631a992f0ce583505c6af0758d5563dab2cd31ee315128862c33a4fb774eb5248db40af72158370d269a9a5ae658f33fe3b890b93f448b3a5aa3c814f426dcbb394fb36bb2d420f0f88080b10a3d6b2aa05e11ab2715945795e8229451abd81f1d69ed617f5e837d70820fe119a72d174c9df6acc011cdd9474031b7f26144b98289fcd59a54a7bb1fee08f571242425051c1ccd17f9acae01f5057ca02135e92b1d3f28ede0d7ac3baea9e13deef86ab1031d0f646e1f40a097c976bf46c697d2caf82eeeacbe226e875555790f82ec1d3fcff2a3af4d46b0a18e8830e07bc1e398f1012bd4acefaecbd389be4bcfc49b64a0872e6cc3ababced2057ee05cde00902c77ebff206867347214cdd2055930d6eaf14f4733f3e7d1bfbc7a2ea20b2f14c942e05319acb5c74273f98e2774cbd87ad5c90a9587403e430ec66a78795e761d17731af10506bf2efc6f877186d76b07e881ed162ae2eb1547f15052434b9b5df9e7769b10f4205b4907a70c31012f037b64ce4228c38fb2918f135d25f557203301850c5a38fd547923a736994e3bf911a61dbe22e44158bae97ba94d0eda82f8f6d05584ef8aa38922766581e27a1c08a6a63ec", "e472f1a38f2c6ec8cc4169a3ae3a2b7fdfe01893f3aed0b6c7ac1491def88334e647cb8f74e69a5d0dd27a65bd628881ad1b72dba7abe1c29e1a8ef4f341e07a83f73f16dbf4a8b2b0c4312d20203626f3fe39c0519088f590fbbd119c1caaf75e8766ed88daf4016b4013ef254b0c4e010c4759482c9cbc43435cc52eae05cf96d0cc5fd4c28c2e7c26847f0316909e3bbbe9eaa8948c893b61867626bb7dbd2d1c9af0153e7c2a26a2c0bd3b1287fff52ddf5d616499c9e25a7605aec6f0245bd86d40fc891b4a6a50df4db4d66a3a47469a4d8cdb305fdd2e16096e36aab0d1bc52d9230d977ee22571594720771f8ca8181166d2287672fdf2022a96fb1a", "bc32d70972be8ac73d71382aa38a902e8061e87028f0b68c9765a31b746f313f80e6729510719c57cc334fcd0a65902b9fd693a932de549d0635edef1f46f5c7d2486909e918d8f91e435ecfacc11a87c400c09cdb392b3cf861222963aeb1e0933daacbeada0a26b2242ddda5cca7b60688190719c63073c89d1a16ba8fee356ab0be773cce929d71da7540d23e5de3cc884d67783ae74e848e621dac1e9f4706f38923a5ac656af67dd9bc66342402c113a2be7417e6066dacb900f404443872c204a50fbcaba6e98856eed3cd8e45f1f002aedccb81562935d1a1574ca51544e93124b671c54b17d3ad7eeb8cdd3e6cab5b6d6e4d1df3ea7b94476b0d45c6"),
        ("85e999f3842e7fc229540a6eb12aa1f6d42fddbb7a86f7a243c71b9abd87a86557b6fb7ebfeaa1551a28f7b324e4e25a15fc899e4fd58dbe7bdc968b7afb2c68774b15d7fa529ba3fe3bfada7cf20724d953ee261d87cec31f7296ab7961fd925d39d0a89a2ef80f58ee8571f4998d7c4093f6dea268aa872607679d6050914a9d33a01c353c631cdfd43f371200339d068739fa9d1de2a05d158a2ff2ee4e4519f9919c895fd7b326b94c7f9118bb16000f49c81a358ca00d75985d99c94309570dc1951c2442f9298cb3a570ccec313571810afc132d0d113db17d30cbc97d0fef792866836886a260cd0b7b45145c1a81682c64e50cad66237a0465e7e423", "f373ca533488f876", "3a98d0845107e871"),
        ("873be078f3b7a50d", "cf9cfc865239194242a2eddbbd5464ecc280b0c08bc77024208aa4248c8857f9a43908f227c59db9165b0ee76f2ac34446e883a1d45de0099784b5a81842d87208d86f40f6b239f3c7174c77a2dd02de92a49636a2fa7f0eab4c4f9b0687322e25c215a82a06ec41adea0575438b0d590bb0a844e52587be6b5c9bcf35", "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000873be078f3b7a50d"),
        ("e7a46309973f798626b1cffc070d710920859634fe3c9c8f2b855c1f28aaca51b98c67c215bd448ff26149edbe4c5ce666c1494e7691b06f6555abfeb8c9817af8be8831f237e45acd02c5e116353d03551fd8f9a2c68e45ca04c79f6f15b6ad2db3997fe39639be7a605a91330698a1c0093492b6246771c845007063771407e8e727891eb20109a91c2439d5ab8b4d15b40aeba4a45effccb573d95810d60ea72991b9e8c147437abec539007d1034d726c86b9c3a23cde67a9b75fc3947249fc2d0a17b8f2ab53451d0135675f6ad325b55dd785729763a12917c1a26f88938703800149e259b5d58c705f979d04af47aebdd597a1ecffcf00fecb91ee9e5efe09f07cefe2a1f727d83495822cb77f4de2c089aea6429b1491e243192b7044259405278e4b98d4787f93bca44eb860726e25cfd56a926076b3e36bb2313f55b06258e7e26f36a8483f8b8332dd3313a0b9965cda6c6fdbd68516766934036d17e44973d4882a5ce5b2a9231f51707da45e18ac2216b02fc241d0bc9d488b1", "a18e0b7bd58dcdb46b4468068b5ab3ee4265bb31537409029620bf0dc38084a03d93fd4c804c25d64affdcd13678bc8d40783f0a072a98d23606defcdfb85c0dd37ee91531dec4f4df2a8b79fc8e80b36f0e228923a5ef88ef02090bbfdefc1586ce03f91a4f44f9a6511445b9f3635cf88c422bcca2a92b03a56cc1057a40b22188287e8c5c715f8c74fc1e27e9e06f59b44e92effddeeaa842bc19796f74adfaf55496988af3fbd39630d69c9011ef256badf9a7e6529bce76e9f477216e9e", "36e8d03eef262a0c89d7ec7f8836eff7da7e6e3c7f27bfc883e6e144b781cb909587e892724616d6ccfa3396f15c73995416d4f162699f63fc56d20ca59b81153c4ab2265b49c827cf3556971af901aa85078af64ad16abfd60c632273822564f18e5d607c51700c1fd883d684c04f8c14c707e421d7cdbba8d82828e1923691631be6bfe2c0375fa9ce9619b8850320262024c4693943f0a469fe938c357bf839fbe2e74033fb3b76d342b0939d3c3c288cb973b329a5e4230854566d6c553d"),
        ("0e77d0a6ec179556585ea997f351754a09cde5cfedfa5a9196f0bd6b881ae8f6e0bd0f977044", "ffffffffffffffff", "4e28e8522d11c5c2"),
    ];
}
