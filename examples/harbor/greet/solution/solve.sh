#!/bin/bash
# The reference solution: Harbor's oracle agent runs this in the task's environment.
cat > /app/greet.sh <<'SCRIPT'
#!/bin/sh
printf 'Hello, %s!\n' "${1:-world}"
SCRIPT
