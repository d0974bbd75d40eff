#!/bin/bash
# An honest wrong answer.
echo 13 > /app/wordcount.txt
