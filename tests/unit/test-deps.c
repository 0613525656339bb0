/* Unit tests of dependency detection and package names (run/deps.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "deps.h"

/* One snippet and the packages it needs, comma-separated, in order. */
struct snippet {
	const char *code;
	const char *want;
};

static const struct snippet python[] = {
    {"import numpy", "numpy"},
    {"import numpy as np\nimport pandas as pd\n", "numpy,pandas"},
    {"import os, sys, requests", "requests"},
    {"import a.b as c", "a"},
    {"import matplotlib.pyplot as plt", "matplotlib"},
    {"import xml.etree.ElementTree as ET, lxml.etree", "lxml"},
    {"from flask import Flask, request", "flask"},
    {"from a.b import c", "a"},
    {"from django.db import (models,\n    transaction)\n", "django"},
    {"from requests import (\n    get,  # the verb\n    post,\n)\n"
     "import httpx\n",
        "requests,httpx"},
    {"from . import sibling\nfrom .pkg import thing\n"
     "from ..up import x\nimport rich",
        "rich"},
    {"from __future__ import annotations\nimport attr", "attrs"},
    {"def f():\n    import scipy.stats\n    return scipy\n", "scipy"},
    {"try:\n    import ujson as json\nexcept ImportError:\n"
     "    import json\n",
        "ujson"},
    {"if True: import toolz", "toolz"},
    {"import os; import tqdm; x = 1", "tqdm"},
    {"x = 1; from rich.console import Console", "rich"},
    {"# import tensorflow\nimport torch  # import jax\n", "torch"},
    {"s = 'import flask'\nt = \"from django import x\"\n", ""},
    {"doc = \"\"\"\nimport numpy\nfrom pandas import x\n\"\"\"\n"
     "import polars\n",
        "polars"},
    {"def f():\n    '''Docstring:\n    import requests\n    '''\n"
     "    import aiohttp\n",
        "aiohttp"},
    {"print(f\"{x} import numpy {y!r:>10}\")\nimport sympy", "sympy"},
    {"s = f\"{d[\"k\"]} import a\"\nimport b", "b"},
    {"s = f'{\"}\"}'\nimport networkx", "networkx"},
    {"s = f'''\n{x:{w}}\nimport no\n'''\nimport yes", "yes"},
    {"p = r'C:\\dir\\\\'\nimport boto3", "boto3"},
    {"p = r\"\\\"import no\"\nimport botocore", "botocore"},
    {"s = 'it\\'s; import no'\nimport click", "click"},
    {"s = b'import no' + rb'\\x00'\nimport typer", "typer"},
    {"m = __import__('numpy')\nimport importlib\n"
     "n = importlib.import_module(\"pandas\")\n",
        ""},
    {"import os, sys, json, re, collections.abc, _thread, typing\n"
     "import asyncio, sqlite3, tomllib, zoneinfo, builtins, marshal\n",
        ""},
    {"from PIL import Image\nimport yaml\nimport sklearn.linear_model\n"
     "import cv2\nfrom bs4 import BeautifulSoup\n",
        "pillow,pyyaml,scikit-learn,opencv-python,beautifulsoup4"},
    {"import skimage, dateutil.parser\nfrom Crypto.Cipher import AES\n"
     "from OpenSSL import SSL\nimport jwt, dotenv, magic, serial, usb\n",
        "scikit-image,python-dateutil,pycryptodome,pyopenssl,pyjwt,"
        "python-dotenv,python-magic,pyserial,pyusb"},
    {"import docx, pptx\nfrom google.protobuf import json_format\n"
     "import MySQLdb, psycopg2\nimport gi\ngi.require_version('Gtk', "
     "'3.0')\n",
        "python-docx,python-pptx,protobuf,mysqlclient,psycopg2-binary,"
        "PyGObject"},
    {"import wx, Levenshtein, sentencepiece, telegram, discord, fitz\n",
        "wxPython,python-Levenshtein,sentencepiece,python-telegram-bot,"
        "discord.py,pymupdf"},
    {"import zmq, lxml, tensorflow as tf, torch.nn as nn\n"
     "from jose import jwt\nfrom slugify import slugify\nimport markdown\n"
     "from ruamel.yaml import YAML\n",
        "pyzmq,lxml,tensorflow,torch,python-jose,python-slugify,markdown,"
        "ruamel.yaml"},
    {"from google.cloud import storage, bigquery\n"
     "import google.generativeai as genai\nimport google\n",
        "google-cloud-storage,google-cloud-bigquery,google-generativeai"},
    {"import numpy\nimport numpy as np\nfrom numpy import array\n", "numpy"},
    {"x = {'a': 1,\n     'b': 2}\nlambda y: y\nimport seaborn", "seaborn"},
    {"class A:\n    def m(self) -> None: import plotly\n", "plotly"},
    {"total = a + \\\n    b\nimport jinja2", "jinja2"},
    {"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from mypy_boto3_s3 import S3Client\n",
        "mypy_boto3_s3"},
    {"while x: import regex", "regex"},
    {"with open(p) as f: from pydantic import BaseModel", "pydantic"},
    {"from .. import x\nfrom ... import y\nfrom .models import z\n", ""},
    {"def importer(): pass\nimporter()\nfrom_ = 3\n", ""},
    {"x = y if z else w\nraise E from err\nyield from gen\n", ""},
    {"import \\\n    arrow", "arrow"},
    {"s = 'unterminated\nimport requests\n", "requests"},
    {"import", ""},
    {"from x", ""},
    {"from . import", ""},
    /* Not a name pip takes (deps_valid_name): not reported. */
    {"import café\nimport ok", "ok"},
    {"if a:\n  pass\nelse: import b\n", "b"},
    {"t = t'{x} import no'\nimport yes", "yes"},
    {"a := 1\nimport e", "e"},
    {"from urllib.request import urlopen\nfrom http.server import "
     "HTTPServer\nimport email.mime.text, concurrent.futures\n",
        ""},
    {"import distutils, imp, asyncore\nimport _pytest\n", "pytest"},
};

static const struct snippet javascript[] = {
    {"const x = require('lodash');", "lodash"},
    {"const x = require(\"express\");", "express"},
    {"import React from 'react';", "react"},
    {"import {a, b} from \"y\";", "y"},
    {"import {\n  useState,\n  useEffect,\n} from 'preact/hooks';", "preact"},
    {"import * as n from 'ramda';", "ramda"},
    {"import 'side-effect';", "side-effect"},
    {"import def, { named } from 'mixed';", "mixed"},
    {"import def, * as ns from 'mixed2';", "mixed2"},
    {"export * from 'reexported';", "reexported"},
    {"export { a, b as c } from 'reexp2';", "reexp2"},
    {"export * as ns from 'reexp3';", "reexp3"},
    {"export { default } from 'reexp4';", "reexp4"},
    {"export const x = 1;\nexport default function f() {}\n"
     "export { x as y };\n",
        ""},
    {"const m = await import('chalk');", "chalk"},
    {"import('dyn').then(m => m.x);", "dyn"},
    {"const p = './local';\nrequire(p);\nrequire(name + '/x');", ""},
    {"require('./a'); require('../b'); require('/abs/c');\n"
     "import x from './x.js';",
        ""},
    {"const fs = require('fs');\nconst fsp = require('fs/promises');\n"
     "const p = require('node:path');\nimport cp from 'child_process';\n"
     "import { pipeline } from 'stream/promises';\n",
        ""},
    {"import test from 'node:test';\nimport sqlite from 'node:sqlite';\n"
     "require('http'); require('https'); require('crypto');\n"
     "require('worker_threads'); require('util/types');\n",
        ""},
    {"import x from '@scope/pkg';", "@scope/pkg"},
    {"import y from '@scope/pkg/sub/deep';", "@scope/pkg"},
    {"import fp from 'lodash/fp';\nconst m = require('lodash/map');", "lodash"},
    {"// require('commented')\n/* import x from 'blocked' */\n"
     "const a = require('real');",
        "real"},
    {"/*\n * import x from 'multi';\n * require('line')\n */\n", ""},
    {"const s = \"require('not')\";\nconst t = 'import x from \"no\"';\n", ""},
    {"const s = `require('tmpl')`;\nconst u = require('yes');", "yes"},
    {"const s = `${a} require('no') ${b}`;\nrequire('after');", "after"},
    {"const s = `${require('inside')}`;", "inside"},
    {"const s = `${`${'nested'}`}` + require('z');", "z"},
    {"const m = require(`tmpl-lit`);", "tmpl-lit"},
    {"const m = require(`tmpl-${v}`);", ""},
    {"const re = /require('no')/g;\nrequire('yes');", "yes"},
    {"const re = /['\"`]/;\nconst z = require('after-regex');", "after-regex"},
    {"const r = a / b; const q = c / d;\nrequire('div');", "div"},
    {"const r = [/a/, /b\\//];\nrequire('rx');", "rx"},
    {"obj.require('no');\nobj.import('no2');\nthis.require = 1;", ""},
    {"const { a, b } = require('destructure');", "destructure"},
    {"import.meta.url;\nimport x from 'after-meta';", "after-meta"},
    {"#!/usr/bin/env node\nrequire('shebang');", "shebang"},
    {"require('a');\nrequire('a');\nimport a from 'a';\n"
     "require('b');",
        "a,b"},
    {"require('uuid').v4();\nrequire('dotenv').config();", "uuid,dotenv"},
    {"require('punycode'); require('sys'); require('test');", "test"},
    {"const x = require('axios')\nconst y = require('cheerio')",
        "axios,cheerio"},
    {"import a from 'https://cdn.example/x.js';\n"
     "import b from 'data:text/javascript,1';\nimport c from '#internal';",
        ""},
    {"import x from", ""},
    {"require(", ""},
    {"const s = 'unterminated\nrequire('ok');", "ok"},
    {"const t = `unterminated ${ require('inside') ", "inside"},
    {"import { from } from 'tricky';", "tricky"},
    {"import {default as x} from 'def-alias';", "def-alias"},
    {"export {a}\nimport 'next-line';", "next-line"},
};

static const struct snippet typescript[] = {
    {"import express, { Request } from 'express';", "express"},
    {"import type { Foo } from 'types-only';\nimport bar from 'runtime';",
        "runtime"},
    {"import type Def from 'types-only';", ""},
    {"import type * as NS from 'types-only';", ""},
    {"import { type A, B } from 'inline-type';", "inline-type"},
    {"import { type A } from 'inline-only';", "inline-only"},
    {"export type { T } from 'types-only';\nexport type * from 't2';", ""},
    {"export type Foo = { a: string };\nexport { x } from 'reexp';", "reexp"},
    {"import type from 'named-type';", "named-type"},
    {"import type, { a } from 'named-type2';", "named-type2"},
    {"import x = require('ts-require');", "ts-require"},
    {"import type y = require('types-only');", ""},
    {"type T = typeof import('types-only');", ""},
    {"const m = await import('runtime-dyn');", "runtime-dyn"},
    {"import { z } from 'zod';\nconst S = z.object({ a: z.string() });", "zod"},
    {"function f<T extends object>(x: T): T { return x; }\n"
     "import a from 'after-generic';",
        "after-generic"},
    {"const x = <const>['a'];\nimport b from 'after-assert';", "after-assert"},
    {"let v = y as unknown as string;\nimport c from 'after-as';", "after-as"},
    {"/// <reference types=\"node\" />\nimport d from 'ref';", "ref"},
    {"declare module 'ambient' { export const x: number; }", ""},
    {"import { readFile } from 'node:fs/promises';\n"
     "import path from 'path';\nimport { EventEmitter } from 'events';",
        ""},
    {"import { Injectable } from '@nestjs/common';\n"
     "import { Repo } from '@nestjs/typeorm/dist/x';",
        "@nestjs/common,@nestjs/typeorm"},
    {"import * as t from '@types/node';", "@types/node"},
    {"import x from './local';\nimport y from '../up/y.ts';", ""},
    {"// import x from 'commented';\nimport y from 'live';", "live"},
    {"const s: string = \"import x from 'no'\";", ""},
    {"enum E { A = 1, B }\nimport e from 'after-enum';", "after-enum"},
    {"interface I { require(x: string): void }\n", ""},
    {"abstract class C { abstract m(): void }\n"
     "import k from 'after-class';",
        "after-class"},
    {"const r = /import x from 'no'/;\nimport ok from 'ok';", "ok"},
    {"@Component({ selector: 'x' })\nclass A {}\n"
     "import ng from '@angular/core';",
        "@angular/core"},
    {"import { a,\n  b,\n  type C,\n} from 'multi-line';", "multi-line"},
    {"export * from 'barrel';\nexport * as b from 'barrel2';",
        "barrel,barrel2"},
    {"const x = obj?.import;\nconst y = a!.require('no');", ""},
    {"import json from './data.json' with { type: 'json' };\n"
     "import cfg from 'cfg-pkg' with { type: 'json' };",
        "cfg-pkg"},
    {"let t = `${x as string} import 'no'`;\nimport y from 'yes';", "yes"},
    {"const a = 1 / 2 / 3;\nimport d from 'division';", "division"},
    {"if (x) { import('lazy'); }", "lazy"},
    {"for (const m of ['a', 'b']) require(m);", ""},
    {"import lodash from 'lodash-es';\nimport fp from 'lodash/fp';",
        "lodash-es,lodash"},
    {"import { describe } from 'vitest';\nimport { x } from 'vitest';",
        "vitest"},
    {"namespace N { export const x = 1; }\nimport n from 'after-ns';",
        "after-ns"},
    {"import type { A } from 'a';\nimport { B } from 'a';", "a"},
};

static const struct snippet go[] = {
    {"package main\nimport \"fmt\"\n", ""},
    {"package main\nimport \"github.com/user/repo\"\n", "github.com/user/repo"},
    {"import \"github.com/user/repo/sub/pkg\"", "github.com/user/repo"},
    {"import (\n\t\"fmt\"\n\t\"net/http\"\n\t\"os\"\n)\n", ""},
    {"import (\n\t\"fmt\"\n\n\t\"github.com/gin-gonic/gin\"\n"
     "\t\"github.com/stretchr/testify/assert\"\n)\n",
        "github.com/gin-gonic/gin,github.com/stretchr/testify"},
    {"import (\n\tf \"fmt\"\n\tr \"github.com/go-redis/redis/v8\"\n)\n",
        "github.com/go-redis/redis/v8"},
    {"import (\n\t_ \"github.com/lib/pq\"\n\t. \"github.com/onsi/gomega\"\n"
     ")\n",
        "github.com/lib/pq,github.com/onsi/gomega"},
    {"import (\n\t// \"github.com/commented/out\"\n"
     "\t/* \"github.com/block/comment\" */\n\t\"github.com/real/one\"\n)\n",
        "github.com/real/one"},
    {"import \"golang.org/x/text/language\"", "golang.org/x/text"},
    {"import \"golang.org/x/sync/errgroup\"\nimport "
     "\"golang.org/x/sync/semaphore\"",
        "golang.org/x/sync"},
    {"import \"gopkg.in/yaml.v3\"", "gopkg.in/yaml.v3"},
    {"import \"gopkg.in/check.v1/sub\"", "gopkg.in/check.v1"},
    {"import \"gitlab.com/group/project/pkg/x\"", "gitlab.com/group/project"},
    {"import \"bitbucket.org/team/repo/inner\"", "bitbucket.org/team/repo"},
    {"import \"example.com/some/deep/module/path\"",
        "example.com/some/deep/module/path"},
    {"import \"google.golang.org/grpc/codes\"", "google.golang.org/grpc"},
    {"import \"google.golang.org/protobuf/proto\"",
        "google.golang.org/protobuf"},
    {"import \"go.uber.org/zap/zapcore\"", "go.uber.org/zap"},
    {"import \"k8s.io/client-go/kubernetes\"", "k8s.io/client-go"},
    {"import \"k8s.io/klog/v2\"", "k8s.io/klog/v2"},
    {"import \"github.com/jackc/pgx/v5/pgxpool\"", "github.com/jackc/pgx/v5"},
    {"import \"github.com/user/repo/v1/x\"", "github.com/user/repo"},
    {"import \"C\"", ""},
    {"import `github.com/raw/string`", "github.com/raw/string"},
    {"func main() {\n\ts := \"import \\\"github.com/not/import\\\"\"\n}\n", ""},
    {"var s = `\nimport \"github.com/not/either\"\n`\n", ""},
    {"import \"encoding/json\"\nimport \"crypto/sha256\"\n"
     "import \"math/rand/v2\"\n",
        ""},
    {"import (\"fmt\"; \"github.com/semi/colon\")", "github.com/semi/colon"},
    {"import (\n\t\"github.com/a/b\"\n\t\"github.com/a/b/c\"\n"
     "\t\"github.com/a/b/d/e\"\n)\n",
        "github.com/a/b"},
    {"import (\n\t\"github.com/spf13/cobra\"\n\t\"github.com/spf13/viper\"\n"
     ")\n",
        "github.com/spf13/cobra,github.com/spf13/viper"},
    {"package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/uuid\"\n"
     ")\n\nfunc main() {\n\tfmt.Println(uuid.New())\n}\n",
        "github.com/google/uuid"},
    {"x.import(\"github.com/not/a/keyword\")", ""},
    {"import (\n\t\"fmt\"\n", ""},
    {"import", ""},
    {"import (", ""},
    {"import \"github.com/unterminated", ""},
    {"r := '\"'\nimport \"github.com/after/rune\"", "github.com/after/rune"},
    {"import \"cloud.google.com/go/storage\"", "cloud.google.com/go/storage"},
    {"import \"modernc.org/sqlite\"", "modernc.org/sqlite"},
    {"import \"github.com/user\"", "github.com/user"},
    {"import (\n\tmysql \"github.com/go-sql-driver/mysql\"\n"
     "\t\"database/sql\"\n)",
        "github.com/go-sql-driver/mysql"},
    {"import \"github.com/a/b\"\nimport \"github.com/c/d\"\n"
     "import \"github.com/a/b\"",
        "github.com/a/b,github.com/c/d"},
    {"// import \"github.com/line/comment\"\n", ""},
};

/* What deps_detect finds in code, comma-joined; code is copied to a
 * buffer of its exact length so a read past the end shows under ASan. */
static char *
detect(const char *lang, const char *code)
{
	struct json_object *a;
	size_t len = strlen(code), i, n, off = 0;
	char *copy, *out;

	copy = malloc(len == 0 ? 1 : len);
	cr_assert_not_null(copy);
	memcpy(copy, code, len);
	a = deps_detect(lang, copy, len);
	free(copy);
	cr_assert_not_null(a, "%s: deps_detect returned NULL", lang);
	cr_assert(json_object_is_type(a, json_type_array));
	n = json_object_array_length(a);
	out = calloc(1, 4096);
	cr_assert_not_null(out);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		cr_assert(json_object_is_type(e, json_type_string));
		off += snprintf(out + off, 4096 - off, "%s%s", i ? "," : "",
		    json_object_get_string(e));
		cr_assert_lt(off, 4096);
	}
	json_object_put(a);
	return out;
}

static void
check_corpus(const char *lang, const struct snippet *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *got = detect(lang, c[i].code);

		cr_expect_str_eq(got, c[i].want,
		    "%s snippet %zu:\n---\n%s\n---\nwant [%s] got [%s]", lang,
		    i, c[i].code, c[i].want, got);
		free(got);
	}
}

/* Every prefix of every snippet: unterminated strings, comments and
 * imports cut anywhere must neither crash nor read past the end. */
static void
check_prefixes(const char *lang, const struct snippet *c, size_t n)
{
	struct json_object *a;
	size_t i, len, cut;
	char *copy;

	for (i = 0; i < n; i++) {
		len = strlen(c[i].code);
		for (cut = 0; cut <= len; cut++) {
			copy = malloc(cut == 0 ? 1 : cut);
			cr_assert_not_null(copy);
			memcpy(copy, c[i].code, cut);
			a = deps_detect(lang, copy, cut);
			cr_assert_not_null(a);
			json_object_put(a);
			free(copy);
		}
	}
}

#define NSNIP(a) (sizeof(a) / sizeof((a)[0]))

Test(deps, corpus_has_forty_snippets_per_language)
{
	cr_expect_geq(NSNIP(python), 40);
	cr_expect_geq(NSNIP(javascript), 40);
	cr_expect_geq(NSNIP(typescript), 40);
	cr_expect_geq(NSNIP(go), 40);
}

Test(deps, lookup_tables_are_sorted)
{
	cr_assert_eq(deps_check_tables(), 0);
}

Test(deps, python_corpus)
{
	check_corpus("python", python, NSNIP(python));
}

Test(deps, javascript_corpus)
{
	check_corpus("javascript", javascript, NSNIP(javascript));
}

Test(deps, typescript_corpus)
{
	check_corpus("typescript", typescript, NSNIP(typescript));
}

Test(deps, go_corpus)
{
	check_corpus("go", go, NSNIP(go));
}

Test(deps, javascript_corpus_reads_the_same_as_typescript)
{
	check_corpus("typescript", javascript, NSNIP(javascript));
}

Test(deps, truncated_snippets_are_safe)
{
	check_prefixes("python", python, NSNIP(python));
	check_prefixes("javascript", javascript, NSNIP(javascript));
	check_prefixes("typescript", typescript, NSNIP(typescript));
	check_prefixes("go", go, NSNIP(go));
}

Test(deps, random_bytes_are_safe)
{
	static const char *const langs[] = {"python", "javascript", "go"};
	struct json_object *a;
	unsigned int seed = 12345;
	char buf[512];
	size_t i, j, k;

	for (k = 0; k < NSNIP(langs); k++)
		for (i = 0; i < 2000; i++) {
			size_t n = rand_r(&seed) % sizeof buf;

			/* Mostly syntax characters, to reach deep states. */
			for (j = 0; j < n; j++)
				buf[j] = "'\"`{}()[]/\\*#\n ;:.fFrRb$im"
				    [rand_r(&seed) % 27];
			a = deps_detect(langs[k], buf, n);
			cr_assert_not_null(a);
			json_object_put(a);
		}
}

Test(deps, deep_nesting_is_bounded)
{
	struct json_object *a;
	size_t n = 100000, i;
	char *buf;

	buf = malloc(n);
	cr_assert_not_null(buf);
	/* f"{f"{f"{ ... and `${`${`${ ... */
	for (i = 0; i < n; i++)
		buf[i] = "f\"{"[i % 3];
	a = deps_detect("python", buf, n);
	cr_assert_not_null(a);
	json_object_put(a);
	for (i = 0; i < n; i++)
		buf[i] = "`${"[i % 3];
	a = deps_detect("javascript", buf, n);
	cr_assert_not_null(a);
	json_object_put(a);
	free(buf);
}

Test(deps, many_distinct_imports)
{
	struct json_object *a;
	char *buf;
	size_t off = 0, i, n = 20000;

	buf = malloc(n * 16);
	cr_assert_not_null(buf);
	for (i = 0; i < n; i++)
		off += sprintf(buf + off, "import m%zu\n", i);
	a = deps_detect("python", buf, off);
	cr_assert_not_null(a);
	cr_expect_eq(json_object_array_length(a), n);
	cr_expect_str_eq(
	    json_object_get_string(json_object_array_get_idx(a, 0)), "m0");
	json_object_put(a);
	free(buf);
}

Test(deps, bash_is_always_empty)
{
	struct json_object *a;
	const char *code = "pip install requests\nimport numpy\n";

	a = deps_detect("bash", code, strlen(code));
	cr_assert_not_null(a);
	cr_expect_eq(json_object_array_length(a), 0);
	json_object_put(a);
}

Test(deps, unknown_language_is_null)
{
	errno = 0;
	cr_expect_null(deps_detect("cobol", "IMPORT X", 8));
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(deps_detect("Python", "import x", 8));
	cr_expect_null(deps_detect(NULL, "import x", 8));
}

Test(deps, empty_and_null_code)
{
	struct json_object *a;

	a = deps_detect("python", NULL, 0);
	cr_assert_not_null(a);
	cr_expect_eq(json_object_array_length(a), 0);
	json_object_put(a);
	a = deps_detect("go", "", 0);
	cr_assert_not_null(a);
	cr_expect_eq(json_object_array_length(a), 0);
	json_object_put(a);
}

Test(deps, code_with_nul_bytes)
{
	struct json_object *a;
	static const char code[] = "import a\0import b\nimport c\n";

	a = deps_detect("python", code, sizeof code - 1);
	cr_assert_not_null(a);
	cr_expect_eq(json_object_array_length(a), 2); /* a, c */
	json_object_put(a);
}

static const char *const managers[] = {"pip", "npm", "go", "apt"};

static const char *const hostile[] = {
    "; rm -rf /",
    "--index-url=http://x",
    "-e git+https://x",
    "-e",
    "-",
    "$(id)",
    "`id`",
    "a`id`",
    "a b",
    "a\tb",
    "a\nb",
    "requests\n",
    "\nrequests",
    "../x",
    "./x",
    "/etc/passwd",
    "http://x/y.whl",
    "https://github.com/a/b.git",
    "git+https://x",
    "file:/tmp/x",
    "x && y",
    "x&&y",
    "x||y",
    "x;y",
    "x|y",
    "x>y",
    "x<y",
    "${HOME}",
    "x$y",
    "'x'",
    "\"x\"",
    "x\\y",
    "(x)",
    "{x,y}",
    "x#y",
    "x?",
    "",
    "caf\xc3\xa9",
    "x\x7f",
};

Test(deps_valid_name, hostile_names_are_rejected_by_every_manager)
{
	size_t m, i;

	for (m = 0; m < NSNIP(managers); m++)
		for (i = 0; i < NSNIP(hostile); i++)
			cr_expect_eq(deps_valid_name(managers[m], hostile[i]),
			    0, "%s accepted [%s]", managers[m], hostile[i]);
}

Test(deps_valid_name, overlong_names_are_rejected)
{
	char buf[400];
	size_t m;

	memset(buf, 'a', sizeof buf - 1);
	buf[sizeof buf - 1] = '\0';
	for (m = 0; m < NSNIP(managers); m++)
		cr_expect_eq(
		    deps_valid_name(managers[m], buf), 0, "%s", managers[m]);
}

Test(deps_valid_name, unknown_manager_and_null)
{
	cr_expect_eq(deps_valid_name("cargo", "serde"), 0);
	cr_expect_eq(deps_valid_name(NULL, "x"), 0);
	cr_expect_eq(deps_valid_name("pip", NULL), 0);
}

static void
expect_names(const char *manager, const char *const *names, size_t n, int want)
{
	size_t i;

	for (i = 0; i < n; i++)
		cr_expect_eq(deps_valid_name(manager, names[i]), want,
		    "%s: [%s] should be %s", manager, names[i],
		    want ? "valid" : "invalid");
}

Test(deps_valid_name, pip)
{
	static const char *const good[] = {"requests", "numpy==1.26.4",
	    "Django>=4,<5", "pkg~=1.2", "pkg!=1.3", "pkg===1.0", "pkg==1.2.*",
	    "zope.interface", "ruamel.yaml", "a", "A1", "python-dateutil",
	    "requests[security,socks]", "uvicorn[standard]>=0.20",
	    "typing_extensions", "pkg<2", "pkg>1.0rc1", "pkg==1.0.post1+local"};
	static const char *const bad[] = {"requests==", "pkg>=", "pkg=1",
	    "-r requirements.txt", "pkg[", "pkg[]", "pkg[a", "[a]", ".pkg",
	    "pkg.", "_pkg", "pkg @ https://x", "pkg@https://x",
	    "pkg==1;python_version<'3'", "pkg,", "pkg==1,", "pkg==1,,<2",
	    "pkg>>1", "pkg==.1", "pkg/sub", "pkg:1", "~=1"};

	expect_names("pip", good, NSNIP(good), 1);
	expect_names("pip", bad, NSNIP(bad), 0);
}

Test(deps_valid_name, npm)
{
	static const char *const good[] = {"lodash", "@types/node",
	    "@scope/pkg@1.2.3", "lodash@4.17.21", "lodash@^4.17.0",
	    "lodash@~4.17", "react@latest", "react@next", "pkg@1.x", "left-pad",
	    "socket.io", "a", "@babel/core@7.24.0-beta.1", "pkg@*"};
	static const char *const bad[] = {"Lodash", "JSONStream", "_pkg",
	    ".pkg", "@scope", "@scope/", "@/pkg", "@Scope/pkg", "pkg@",
	    "pkg@>=1", "pkg@1 || 2", "git+ssh://x", "github:a/b", "npm:lodash",
	    "a/b", "pkg@file:../x", "node_modules", "pkg@1.0.0@2", "@a/b/c"};

	expect_names("npm", good, NSNIP(good), 1);
	expect_names("npm", bad, NSNIP(bad), 0);
}

Test(deps_valid_name, go)
{
	static const char *const good[] = {"github.com/user/repo",
	    "github.com/user/repo@v1.2.3", "golang.org/x/tools@latest",
	    "github.com/jackc/pgx/v5", "gopkg.in/yaml.v3",
	    "github.com/a/b@v0.0.0-20240101000000-abcdef123456",
	    "example.com/m@master", "golang.org/x/tools/cmd/goimports@latest",
	    "github.com/user/repo_name", "honnef.co/go/tools@v0.4.6"};
	static const char *const bad[] = {"fmt", "std", "cmd/go",
	    "github.com/user/repo/", "github.com//repo", ".github.com/x",
	    "github.com/./x", "github.com/../x", "github.com/a/...",
	    "github.com/a/b@", "github.com/a/b@-x", "github.com/a/b@v1@v2",
	    "github.com:a/b", "x.com/a b", "github.com/a/b.",
	    "github.com/a/-b"};

	expect_names("go", good, NSNIP(good), 1);
	expect_names("go", bad, NSNIP(bad), 0);
}

Test(deps_valid_name, apt)
{
	static const char *const good[] = {"curl", "libssl-dev", "g++",
	    "python3.12", "libc6=2.36-9", "git=1:2.39.2-1.1", "lib32z1", "0ad",
	    "node-typescript=4.9.5+ds1-2"};
	static const char *const bad[] = {"Curl", "c", "lib_x", "-curl",
	    "curl=", "curl=abc", "curl/bookworm", "curl:amd64", ".curl", "+x",
	    "curl==1", "*"};

	expect_names("apt", good, NSNIP(good), 1);
	expect_names("apt", bad, NSNIP(bad), 0);
}
