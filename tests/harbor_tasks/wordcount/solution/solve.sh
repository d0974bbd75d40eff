#!/bin/bash
# The reference solution: Harbor's oracle agent runs this in the task's box.
wc -w < /app/words.txt | tr -d ' ' > /app/wordcount.txt
