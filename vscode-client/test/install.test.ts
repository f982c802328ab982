import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findWheel, pipInstall, shellQuote } from '../src/model/install';

test('the install command names the interpreter and the wheel shipped in the extension, never PyPI\'s "flower"', () => {
    const wheel = '/home/me/.vscode/extensions/flower.flower-0.1.0/python/flower-0.1.0-py3-none-any.whl';
    assert.equal(pipInstall('/usr/bin/python3', { wheel }), `/usr/bin/python3 -m pip install ${wheel}`);
    assert.doesNotMatch(pipInstall('python3', { wheel }), /install flower$/);
});

test('run from a checkout, the command installs the checkout (editable)', () => {
    assert.equal(pipInstall('python3', { checkout: '/src/flower' }), 'python3 -m pip install -e /src/flower');
});

test('paths with spaces or quotes reach pip as one word', () => {
    assert.equal(
        pipInstall('/Users/me/My Envs/bin/python', { wheel: "/ext/it's/flower-0.1.0-py3-none-any.whl" }),
        `'/Users/me/My Envs/bin/python' -m pip install '/ext/it'\\''s/flower-0.1.0-py3-none-any.whl'`,
    );
    assert.equal(shellQuote('a$b'), `'a$b'`);
    assert.equal(shellQuote(''), `''`);
});

test('the wheel is the flower one, the newest when several', () => {
    assert.equal(findWheel(['README.md', 'flower-0.1.0-py3-none-any.whl']), 'flower-0.1.0-py3-none-any.whl');
    assert.equal(findWheel(['flower-0.9.0-py3-none-any.whl', 'flower-0.10.0-py3-none-any.whl']), 'flower-0.10.0-py3-none-any.whl');
    assert.equal(findWheel(['flowerpot-1.0-py3-none-any.whl', 'flower-0.1.0.tar.gz']), undefined);
    assert.equal(findWheel([]), undefined);
});
