from django.test import TestCase, TransactionTestCase

from blog.models import Author, Post
from testdbd.django import CommittingTestCase, RollbackTestCase


class Committing(CommittingTestCase):
    def test_create(self):
        a = Author.objects.create(email="new@example.com")
        self.assertEqual(a.id, 2)  # the template's next id, every time
        Post.objects.create(author=a, title="Hello")

    def test_create_again(self):
        self.test_create()

    def test_template_is_back(self):
        self.assertEqual(Author.objects.count(), 1)
        self.assertEqual(Post.objects.count(), 0)


class InTransactions(RollbackTestCase):
    def test_create(self):
        self.assertEqual(Author.objects.count(), 1)
        Author.objects.create(email="tx@example.com")

    def test_seeded(self):
        self.assertTrue(Author.objects.filter(email="ada@example.com").exists())


class AfterTransactions(CommittingTestCase):
    def test_counter_rewound(self):
        self.assertEqual(Author.objects.create(email="z@example.com").id, 2)


# Django's own test cases, as Django documents them.


class Seeded(TestCase):
    """TestCase: each test in a transaction, rolled back; the rows the
    migrations inserted are there."""

    def test_seeded(self):
        self.assertTrue(Author.objects.filter(email="ada@example.com").exists())
        Author.objects.create(email="seeded@example.com")

    def test_rolled_back(self):
        self.assertFalse(Author.objects.filter(email="seeded@example.com").exists())


class WithTestData(TestCase):
    """TestCase: setUpTestData's rows are there in each test of the class,
    and gone after it."""

    @classmethod
    def setUpTestData(cls):
        cls.author = Author.objects.get(email="ada@example.com")
        Post.objects.create(author=cls.author, title="Class data")

    def test_post(self):
        self.assertEqual(self.author.post_set.get().title, "Class data")
        Post.objects.create(author=self.author, title="Rolled back")

    def test_post_again(self):
        self.assertEqual(Post.objects.count(), 1)


class Flushes(TransactionTestCase):
    """TransactionTestCase: the test commits; Django empties every table
    after it (flush)."""

    def test_commits(self):
        Author.objects.create(email="flushed@example.com")
        self.assertEqual(Author.objects.filter(email="flushed@example.com").count(), 1)


class KeepsSeed(TransactionTestCase):
    """serialized_rollback: each test starts with the rows the migrations
    inserted, although the test before it (Flushes, or this class's other
    test) emptied every table."""

    serialized_rollback = True

    def test_seeded(self):
        Author.objects.get(email="ada@example.com")
        self.assertFalse(Author.objects.filter(email="kept@example.com").exists())
        Author.objects.create(email="kept@example.com")

    def test_seeded_again(self):
        self.test_seeded()
