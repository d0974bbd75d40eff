use std::io::{self, Read};

fn main() {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s).unwrap();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let q = it.next().unwrap();
    for _ in 0..q {
        let n = it.next().unwrap();
        let (mut a, mut b) = (0u64, 1u64);
        for _ in 0..n {
            let t = (a + b) % 1_000_000_007;
            a = b;
            b = t;
        }
        println!("{}", a);
    }
}
