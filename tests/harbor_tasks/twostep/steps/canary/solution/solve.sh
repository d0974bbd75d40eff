#!/bin/bash
echo canary-7f3a9c > /app/canary.txt
