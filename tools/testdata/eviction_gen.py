# Writes eviction.json: deepagents 0.7.8's own preview and message for the
# inputs below, which tools/evict_test.go compares with the Go port. Run in
# a directory holding deepagents==0.7.8's libs/deepagents/deepagents/
# backends/utils.py as utils.py and middleware/_message_eviction.py as
# ev.py:  python3 eviction_gen.py eviction.json
import ast, json, sys
src = open('utils.py').read()
tree = ast.parse(src)
ns = {}
want = {'format_content_with_line_numbers', 'MAX_LINE_LENGTH'}
code = []
for node in tree.body:
    if isinstance(node, ast.FunctionDef) and node.name in want:
        code.append(ast.get_source_segment(src, node))
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        t = node.targets[0] if isinstance(node, ast.Assign) else node.target
        if getattr(t, 'id', None) in want:
            code.append(ast.get_source_segment(src, node))
exec("from typing import Final\n" + "\n".join(code), ns)
src2 = open('ev.py').read()
t2 = ast.parse(src2)
for node in t2.body:
    if isinstance(node, ast.FunctionDef) and node.name == '_create_content_preview':
        exec(ast.get_source_segment(src2, node), ns)
    if isinstance(node, ast.Assign) and node.targets[0].id == 'TOO_LARGE_TOOL_MSG':
        exec(ast.get_source_segment(src2, node), ns)
cases = {
 'empty': '',
 'one': 'hello',
 'ten': '\n'.join(f'line {i}' for i in range(1, 11)) + '\n',
 'eleven': '\n'.join(f'line {i}' for i in range(1, 12)),
 'fifteen_crlf': '\r\n'.join(f'l{i}' for i in range(15)) + '\r\n',
 'many': ''.join(f'{i}\n' for i in range(12000)) + 'FAIL: the last line\n',
 'long_lines': ('x' * 3000 + '\n') * 3,
 'unicode_cut': ('é' * 1200 + '\n') * 12 + 'ü' * 999 + '🙂🙂',
 'separators': 'a\u2028b\u2029c\x85d\x1ce\x0bf\x0cg\rh\n\ni\n',
 'blank_lines': '\n' * 30,
}
out = {}
for k, v in cases.items():
    p = ns['_create_content_preview'](v)
    out[k] = {'input': v, 'preview': p, 'message': ns['TOO_LARGE_TOOL_MSG'].format(tool_call_id='call.1/x', file_path='/large_tool_results/call_1_x', content_sample=p)}
json.dump(out, open(sys.argv[1], 'w'), ensure_ascii=False, indent=1)
