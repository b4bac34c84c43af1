//! Times the chunk scan on the file given.
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string(std::env::args().nth(1).expect("a file")).expect("readable");
    for _ in 0..3 {
        let t = Instant::now();
        let n = dfort_syntax::chunks::split_units(&text).len();
        let a = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let m = dfort_syntax::chunks::split_fine(&text).len();
        let b = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let l = text.lines().count();
        let c = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "split_units {a:.2} ms ({n}), split_fine {b:.2} ms ({m}), lines() {c:.2} ms ({l})"
        );
    }
}
