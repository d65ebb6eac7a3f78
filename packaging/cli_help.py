#!/usr/bin/env python3
"""Shell completions and the man page's COMMANDS section, from the CLI's own help.

Runs the built `gpuscope --help` and `gpuscope help COMMAND` (CLI11's format)
at build time, so the completions and the man page can never drift from the
options the binary really takes.

Usage: cli_help.py GPUSCOPE bash|zsh|man-commands OUTPUT
"""
import re
import subprocess
import sys
from dataclasses import dataclass, field

# CLI11 writes an option's value type after its names: TEXT, INT:POSITIVE,
# FLOAT:FLOAT in [...], TEXT:{a,b,c}; flags have none ("Excludes:", "Needs:"
# or the description follow instead).
VALUE_TYPE = re.compile(r"^(TEXT|INT|UINT|FLOAT)(:\S*)?$")
CHOICES = re.compile(r"^\w+:(?:\{([^}]*)\}|(\w+(?:\|[\w:]+)+))$")
# An entry whose head leaves no two-space gap before its description:
# "--top UINT:INT in [1 - 100] Findings to show".
RANGE_HEAD = re.compile(r"^(\S+)\s+(\S+)\s+in\s+\[[^\]]*\]\s*(.*)$")


@dataclass
class Option:
    names: list
    value: str = ""          # "" for a flag, else TEXT / INT / UINT / FLOAT
    choices: list = field(default_factory=list)
    help: str = ""


@dataclass
class Command:
    name: str
    summary: str
    help_text: str = ""
    options: list = field(default_factory=list)
    positionals: list = field(default_factory=list)   # (name, type)


def run_help(gpuscope, *args):
    out = subprocess.run([gpuscope, *args], check=True, capture_output=True, text=True).stdout
    return out


def sections(text):
    """Maps 'Options' / 'Positionals' / 'Subcommands' to their indented lines."""
    found, current = {}, None
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Za-z ]*:$", line):
            current = found.setdefault(line[:-1], [])
        elif current is not None and line.startswith("  "):
            current.append(line)
        elif not line.strip():
            current = None
    return found


def entries(lines):
    """Joins CLI11's continuation lines (description wrapped under a long head)."""
    merged = []
    for line in lines:
        if line.startswith("  ") and not line.startswith("   ") or not merged:
            merged.append(line.strip())
        else:
            merged[-1] += "  " + line.strip()
    return merged


def parse_option(entry):
    head, _, description = entry.partition("  ")
    ranged = RANGE_HEAD.match(head)
    if ranged and not description:
        head, description = f"{ranged.group(1)} {ranged.group(2)}", ranged.group(3)
    tokens = head.split()
    names = [re.sub(r"\{.*\}$", "", n) for n in tokens[0].split(",")]
    option = Option(names=names, help=description.strip())
    if len(tokens) > 1 and VALUE_TYPE.match(tokens[1]):
        option.value = tokens[1].split(":")[0]
        choices = CHOICES.match(tokens[1])
        if choices and choices.group(1):
            option.choices = choices.group(1).split(",")
        elif choices:  # stop|repeat|repeat:N: the literal words
            option.choices = [c for c in choices.group(2).split("|") if ":" not in c]
    return option


def takes_file(option):
    return option.value == "TEXT" and any("output" in n for n in option.names)


def parse_command(gpuscope, name, summary):
    text = run_help(gpuscope, "help", name)
    found = sections(text)
    command = Command(name=name, summary=summary, help_text=text)
    command.options = [parse_option(e) for e in entries(found.get("Options", []))]
    for entry in entries(found.get("Positionals", [])):
        tokens = entry.split()
        command.positionals.append((tokens[0], tokens[1] if len(tokens) > 1 else "TEXT"))
    return command


def parse_cli(gpuscope):
    top = run_help(gpuscope, "--help")
    commands = []
    for entry in entries(sections(top).get("Subcommands", [])):
        name, _, summary = entry.partition(" ")
        commands.append(parse_command(gpuscope, name, summary.strip()))
    return top, commands


def positional_kind(command):
    if command.name == "help":
        return "command"
    if command.name == "run":
        return "program"
    if not command.positionals:
        return "none"
    return "files" if command.positionals[0][1] == "TEXT" else "none"


def bash_case(command):
    flags = " ".join(n for o in command.options for n in o.names)
    valued = [o for o in command.options if o.value]
    value_cases = []
    for o in valued:
        pattern = "|".join(o.names)
        if o.choices:
            value_cases.append(f'      {pattern}) COMPREPLY=($(compgen -W "{" ".join(o.choices)}" -- "$cur")); return ;;')
        elif takes_file(o):
            value_cases.append(f'      {pattern}) _gpuscope_files; return ;;')
        else:
            value_cases.append(f'      {pattern}) return ;;')
    lines = [f"    {command.name})", f'      options="{flags}"', '      case $prev in']
    lines += [" " * 2 + c for c in value_cases]
    lines += ["      esac", f"      positional={positional_kind(command)} ;;"]
    return "\n".join(lines)


def bash_script(commands):
    names = " ".join(c.name for c in commands)
    cases = "\n".join(bash_case(c) for c in commands)
    return f"""# bash completion for gpuscope
# Generated at build time from `gpuscope help COMMAND` (packaging/cli_help.py).

_gpuscope_files() {{
  compopt -o filenames 2>/dev/null
  COMPREPLY=($(compgen -f -- "$cur"))
}}

_gpuscope() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local commands="{names}" command="" options="" positional=none i
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ -z $command && ${{COMP_WORDS[i]}} != -* ]]; then
      command=${{COMP_WORDS[i]}}
    elif [[ $command == run && ${{COMP_WORDS[i]}} == -- ]]; then
      # After `run ... --`: the program and its own arguments.
      if declare -F _command_offset >/dev/null; then _command_offset $((i + 1)); return; fi
      if ((COMP_CWORD == i + 1)); then COMPREPLY=($(compgen -c -- "$cur")); else _gpuscope_files; fi
      return
    fi
  done
  if [[ -z $command ]]; then
    COMPREPLY=($(compgen -W "$commands -h --help -V --version" -- "$cur"))
    return
  fi
  case $command in
{cases}
    *) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi
  case $positional in
    files) _gpuscope_files ;;
    command) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    program) COMPREPLY=($(compgen -W "--" -- "$cur")) ;;
  esac
}}
complete -F _gpuscope gpuscope
"""


def zsh_quote(text):
    """Text inside a single-quoted _arguments spec: brackets and colons escaped."""
    text = text.replace("\\", "\\\\").replace("'", "'\\''")
    return re.sub(r"([\[\]:])", r"\\\1", text)


def zsh_option(option):
    summary = zsh_quote(re.split(r"(?<!e\.g)\. ", option.help)[0][:100])
    if option.choices:
        action = f":{option.value.lower()}:({' '.join(option.choices)})"
    elif takes_file(option):
        action = f":{option.value.lower()}:_files"
    elif option.value:
        action = f":{option.value.lower()}: "
    else:
        action = ""
    suffix = "=" if option.value and option.names[-1].startswith("--") else ""
    if len(option.names) == 1:
        return f"'{option.names[0]}{suffix}[{summary}]{action}'"
    exclusive = " ".join(option.names)
    spec = f"'({exclusive})'{{{','.join(n + ('=' if n.startswith('--') and option.value else '') for n in option.names)}}}"
    return f"{spec}'[{summary}]{action}'"


def zsh_positional(command):
    kind = positional_kind(command)
    if kind == "program":
        return ["'*::program and its arguments:_normal'"]
    if kind == "command":
        return ["'1:command:_gpuscope_commands'"]
    if kind == "files":
        return ["'*:trace:_files'"]
    return []


def zsh_script(commands):
    described = "\n".join(f"    '{c.name}:{zsh_quote(c.summary)}'" for c in commands)
    cases = []
    for c in commands:
        specs = [zsh_option(o) for o in c.options] + zsh_positional(c)
        body = " \\\n        ".join(specs)
        cases.append(f"    {c.name})\n      _arguments -s \\\n        {body} ;;")
    return f"""#compdef gpuscope
# zsh completion for gpuscope
# Generated at build time from `gpuscope help COMMAND` (packaging/cli_help.py).

_gpuscope_commands() {{
  local -a commands
  commands=(
{described}
  )
  _describe -t commands 'gpuscope command' commands
}}

_gpuscope() {{
  local curcontext=$curcontext state line
  _arguments -C \\
    '(- *)'{{-h,--help}}'[Print help and exit]' \\
    '(- *)'{{-V,--version}}'[Print the version and exit]' \\
    '1:command:_gpuscope_commands' \\
    '*::argument:->command'
  [[ $state == command ]] || return
  case $words[1] in
{chr(10).join(cases)}
  esac
}}

_gpuscope "$@"
"""


def roff_escape(line):
    line = line.replace("\\", "\\e")
    return "\\&" + line if line.startswith((".", "'")) else line


def man_commands(commands):
    """help2man --include text: a COMMANDS section with each command's help."""
    out = ["[COMMANDS]"]
    for c in commands:
        out += [f'.SS "gpuscope {c.name}"', ".nf"]
        out += [roff_escape(line) for line in c.help_text.rstrip().splitlines()]
        out.append(".fi")
    out += ["[SEE ALSO]", "The documentation installed with gpuscope (share/doc/gpuscope: README.md and docs/),",
            "also at the project's repository."]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("bash", "zsh", "man-commands"):
        sys.exit(__doc__.strip().splitlines()[-1])
    gpuscope, kind, output = sys.argv[1:]
    _, commands = parse_cli(gpuscope)
    if not commands:
        sys.exit(f"cli_help: no subcommands in `{gpuscope} --help`")
    text = {"bash": bash_script, "zsh": zsh_script, "man-commands": man_commands}[kind](commands)
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
