#!/bin/bash
# A wrong solution to examples/harbor/greet: forgets the default name.
cat > /app/greet.sh <<'SCRIPT'
#!/bin/sh
printf 'Hello, %s!\n' "$1"
SCRIPT
