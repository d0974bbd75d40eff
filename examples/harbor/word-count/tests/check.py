import subprocess

text = open("/tests/sample.txt", encoding="utf-8").read()
want = f"{text.count(chr(10))} {len(text.split())} {len(text)}"
try:
    got = subprocess.run(
        ["python3", "/app/wc.py", "/tests/sample.txt"], capture_output=True, text=True, timeout=30
    ).stdout.strip()
except subprocess.TimeoutExpired:
    got = None
print(1 if got == want else 0)
