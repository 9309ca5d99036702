// Command gosortparity reads a JSON list of integer key lists on stdin and prints, for each,
// the permutation Go's sort.Slice leaves when it sorts the indexes by key (strict less), as a
// JSON list of lists. The Python port of sort.Slice is checked against it.
package main

import (
	"encoding/json"
	"os"
	"sort"
)

func main() {
	var cases [][]int
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	out := make([][]int, len(cases))
	for c, keys := range cases {
		perm := make([]int, len(keys))
		for i := range perm {
			perm[i] = i
		}
		sort.Slice(perm, func(a, b int) bool { return keys[perm[a]] < keys[perm[b]] })
		out[c] = perm
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
