use std::io::{self, Read};

// Exponential recursion: right answers, far over the CPU limit for n = 50 and 90.
fn fib(n: u64) -> u64 {
    if n < 2 { n } else { (fib(n - 1) + fib(n - 2)) % 1_000_000_007 }
}

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let q = it.next().unwrap();
    for _ in 0..q {
        println!("{}", fib(it.next().unwrap()));
    }
}
