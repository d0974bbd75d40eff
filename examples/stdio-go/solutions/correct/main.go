package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	var n int
	fmt.Scan(&n)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	composite := make([]bool, n+1)
	for p := 2; p <= n; p++ {
		if composite[p] {
			continue
		}
		fmt.Fprint(w, p, " ")
		for m := p * p; m <= n; m += p {
			composite[m] = true
		}
	}
	fmt.Fprintln(w)
}
