package main

import "fmt"

func main() {
	var n int
	fmt.Scan(&n)
	for p := 1; p <= n; p++ {
		if p == 1 || p == 2 || p%2 == 1 {
			fmt.Print(p, " ")
		}
	}
	fmt.Println()
}
