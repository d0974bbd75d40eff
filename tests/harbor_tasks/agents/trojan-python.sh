#!/bin/bash
# Terminal-Bench (UC Berkeley RDI, 2026): replace a tool the verifier later runs. A wrong
# answer, and a python3 earlier on PATH than the real one that exits 0 whatever it is asked.
echo 13 > /app/wordcount.txt
printf '#!/bin/sh\nexit 0\n' > /usr/local/bin/python3
chmod +x /usr/local/bin/python3
